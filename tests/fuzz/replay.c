/* Replays a fuzz corpus without libFuzzer: each file named in argv, or each file of a named
 * directory. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Feeds one file to the target; returns 0 or -errno when it cannot be read. */
static int replay_file(const char *path) {
        FILE *f = fopen(path, "re");
        uint8_t *buf = NULL;
        size_t n = 0, cap = 0;

        if (!f)
                return -errno;
        for (;;) {
                size_t k;

                if (n == cap) {
                        uint8_t *b = realloc(buf, cap = cap ? cap * 2 : 4096);
                        if (!b) {
                                free(buf);
                                fclose(f);
                                return -ENOMEM;
                        }
                        buf = b;
                }
                k = fread(buf + n, 1, cap - n, f);
                if (k == 0)
                        break;
                n += k;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
        return 0;
}

/* Replays a file, or every regular file in a directory (not recursing); returns the count or
 * -errno. */
static int replay_path(const char *path) {
        struct stat st;
        DIR *dir;
        struct dirent *de;
        int count = 0;

        if (stat(path, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return replay_file(path) < 0 ? -EIO : 1;

        dir = opendir(path);
        if (!dir)
                return -errno;
        while ((de = readdir(dir))) {
                char p[4096];

                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
                if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (replay_file(p) < 0) {
                        closedir(dir);
                        return -EIO;
                }
                count++;
        }
        closedir(dir);
        return count;
}

int main(int argc, char *argv[]) {
        int total = 0;

        for (int i = 1; i < argc; i++) {
                int r = replay_path(argv[i]);
                if (r < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(-r));
                        return EXIT_FAILURE;
                }
                total += r;
        }
        if (total == 0) {
                fprintf(stderr, "no corpus file replayed\n");
                return EXIT_FAILURE;
        }
        printf("replayed %d inputs\n", total);
        return EXIT_SUCCESS;
}
