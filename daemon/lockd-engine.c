/* lockd-engine: everything of lockd but spawning, as user lockd; started by lockd only. */
#include "daemon.h"

int main(int argc, char **argv) {
        return lockd_main(argc, argv);
}
