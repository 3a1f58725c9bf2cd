/* lockd: answers one bit about a granted file through a sandboxed, signed plugin. */
#include "daemon.h"

int main(int argc, char **argv) {
        return lockd_main(argc, argv);
}
