/* lockd: the spawner, root (ARCHITECTURE.md): it starts the engine and runs its plugins. */
#include "spawner-run.h"

int main(int argc, char **argv) {
        return spawner_run(argc, argv);
}
