/* lockctl plugin test|lint: a plugin directory checked and run offline, under lockd's own sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "escape.h"
#include "fd-util.h"
#include "inputs.h"
#include "lockctl.h"
#include "macro.h"
#include "manifest.h"
#include "runner.h"
#include "sandbox.h"
#include "uidpool.h"

#define FIXTURE_BYTES_MAX (1024 * MiB)

/* Reads and validates DIR/plugin.toml; prints the error itself. 0 or LOCKCTL_EXIT_*. */
static int load_manifest(int dirfd, const char *dir, Manifest **ret, FILE *diag_out, int err_exit) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        ManifestDiag diag = {};
        size_t len;
        int r;

        fd = openat(dirfd, "plugin.toml", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        r = read_full_fd(fd, MANIFEST_BYTES_MAX, &buf, &len);
        if (r == -EFBIG) {
                fprintf(diag_out, "error: %s: plugin.toml is larger than %d bytes (1:1)\n",
                        manifest_error_name(E_MANIFEST_TOO_LARGE), MANIFEST_BYTES_MAX);
                return err_exit;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        r = manifest_parse(buf, len, ret, &diag);
        if (r == -EINVAL) {
                fprintf(diag_out, "error: %s: %s (%u:%u)\n", manifest_error_name(diag.code),
                        diag.message, diag.line, diag.column);
                return err_exit;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        return 0;
}

static int verb_plugin_lint(int argc, char **argv) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_close_ int dirfd = -1;
        int r;

        if (argc != 1) {
                fprintf(stderr, "usage: lockctl plugin lint DIR\n");
                return LOCKCTL_EXIT_USAGE;
        }
        dirfd = open(argv[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", argv[0], strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        r = load_manifest(dirfd, argv[0], &m, stdout, LOCKCTL_EXIT_FAIL);
        if (r != 0)
                return r;
        printf("ok\n");
        return LOCKCTL_EXIT_OK;
}

/*
 * Builds the canonical fd-6 JSON from the --input NAME=VALUE arguments: every declared input given
 * exactly once, nothing undeclared, each value fitting its kind and max_bytes.
 */
static int build_inputs(const Manifest *m, char **values, size_t n_values, char **ret) {
        const char *given[MANIFEST_INPUTS_MAX] = {};
        _cleanup_(json_decrefp) json_t *obj = NULL;

        for (size_t i = 0; i < n_values; i++) {
                char *eq = strchr(values[i], '=');
                const ManifestInput *in;
                size_t k;

                if (!eq) {
                        fprintf(stderr, "lockctl: --input takes NAME=VALUE\n");
                        return -EINVAL;
                }
                *eq = 0;
                in = manifest_find_input(m, values[i]);
                if (!in) {
                        fprintf(stderr, "lockctl: the manifest declares no input '%s'\n",
                                values[i]);
                        return -EINVAL;
                }
                k = (size_t)(in - m->inputs);
                if (given[k]) {
                        fprintf(stderr, "lockctl: input '%s' given twice\n", values[i]);
                        return -EINVAL;
                }
                if (input_value_check(in, eq + 1, strlen(eq + 1)) < 0) {
                        /* Never echo the value: it may be a secret the human typed. */
                        fprintf(stderr,
                                "lockctl: input_invalid: the value of '%s' is not a valid "
                                "%s of at most %u bytes\n",
                                in->name, input_kind_name(in->kind), in->max_bytes);
                        return -EINVAL;
                }
                given[k] = eq + 1;
        }
        obj = json_object();
        if (!obj)
                return -ENOMEM;
        for (size_t k = 0; k < m->n_inputs; k++) {
                if (!given[k]) {
                        fprintf(stderr, "lockctl: missing --input %s=VALUE\n", m->inputs[k].name);
                        return -EINVAL;
                }
                if (json_object_set_new(obj, m->inputs[k].name, json_string(given[k])) < 0)
                        return -ENOMEM;
        }
        *ret = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        return *ret ? 0 : -ENOMEM;
}

static void print_result(const RunResult *res) {
        char cause[64];

        printf("%s\n", run_outcome_name(res->outcome));
        fflush(stdout);
        if (res->outcome == RUN_PLUGIN_ERROR)
                fprintf(stderr, "cause: %s\n", run_cause_format(res, cause, sizeof(cause)));
        fprintf(stderr,
                "uid: %u, landlock abi: %d, cpu: %.3f s, peak memory: %.1f MiB, wall: %.3f s, "
                "stdout: %" PRIu64 " bytes, stderr: %" PRIu64 " bytes (discarded)\n",
                (unsigned)res->uid, res->landlock_abi, res->cpu_usec / 1e6,
                res->peak_rss_bytes / (double)MiB, res->wall_usec / 1e6, res->stdout_bytes,
                res->stderr_bytes);
        if (res->detail_total > 0) {
                _cleanup_free_ char *esc = escape_bytes(res->detail, res->detail_len);
                fprintf(stderr, "detail (shown here only%s): %s\n",
                        res->detail_total > res->detail_len ? ", first 4 KiB" : "",
                        esc ? esc : "(out of memory)");
        }
}

static int verb_plugin_test(int argc, char **argv) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        _cleanup_close_ int dirfd = -1, bin = -1, fix = -1, snap = -1, input = -1;
        _cleanup_free_ char *inputs = NULL;
        char *values[64];
        size_t n_values = 0;
        const char *dir = NULL, *fixture = NULL;
        RunParams p = {};
        RunResult res;
        UidPool pool = {};
        int r;

        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--input") == 0) {
                        if (i + 1 >= argc || n_values >= ELEMENTSOF(values))
                                goto usage;
                        values[n_values++] = argv[++i];
                } else if (strncmp(argv[i], "--input=", 8) == 0) {
                        if (n_values >= ELEMENTSOF(values))
                                goto usage;
                        values[n_values++] = argv[i] + 8;
                } else if (argv[i][0] == '-' && argv[i][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[i]);
                        goto usage;
                } else if (!dir) {
                        dir = argv[i];
                } else if (!fixture) {
                        fixture = argv[i];
                } else {
                        goto usage;
                }
        }
        if (!dir || !fixture)
                goto usage;

        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        /* stdout is the answer's line only: a manifest error goes to stderr here. */
        r = load_manifest(dirfd, dir, &m, stderr, LOCKCTL_EXIT_USAGE);
        if (r != 0)
                return r;
        if (m->n_inputs > 0) {
                if (build_inputs(m, values, n_values, &inputs) < 0)
                        return LOCKCTL_EXIT_USAGE;
        } else if (n_values > 0) {
                fprintf(stderr, "lockctl: the manifest declares no inputs\n");
                return LOCKCTL_EXIT_USAGE;
        }

        bin = openat(dirfd, "plugin", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (bin < 0) {
                fprintf(stderr, "lockctl: %s/plugin: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        SandboxSpec spec = {
                .protocol = m->protocol,
                .inputs = m->n_inputs > 0,
                .detail = m->detail,
                .limits = {.cpu_s = m->cpu_s,
                           .memory_bytes = m->memory_bytes,
                           .timeout_s = m->timeout_s},
        };
        r = sandbox_new(bin, &spec, &sb);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin: %s\n", dir, sandbox_strerror(r));
                return LOCKCTL_EXIT_USAGE;
        }

        /* The fixture is snapshotted like a granted file: a sealed copy, opened read-only. */
        fix = open(fixture, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fix < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", fixture, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        snap = memfd_snapshot(fix, "lockd-input", FIXTURE_BYTES_MAX, false);
        if (snap < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", fixture, strerror(-snap));
                return LOCKCTL_EXIT_USAGE;
        }
        input = fd_reopen_readonly(snap);
        if (input < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", fixture, strerror(-input));
                return LOCKCTL_EXIT_USAGE;
        }

        p.input_fd = input;
        p.inputs_json = inputs;
        p.inputs_len = inputs ? strlen(inputs) : 0;
        if (geteuid() == 0) {
                /* As root the plugin gets an ephemeral uid of the default range, as under lockd. */
                r = uid_pool_init(&pool, LOCKD_UID_MIN_DEFAULT, LOCKD_UID_MAX_DEFAULT);
                if (r < 0) {
                        fprintf(stderr, "lockctl: uid range: %s\n", strerror(-r));
                        return LOCKCTL_EXIT_USAGE;
                }
                pool.next = pool.min + (uid_t)((unsigned)getpid() % (pool.max - pool.min + 1));
                r = uid_pool_acquire(&pool, &p.uid);
                uid_pool_done(&pool);
                if (r < 0)
                        return LOCKCTL_EXIT_USAGE;
                p.gid = (gid_t)p.uid;
                p.drop_to_uid = true;
        }

        r = runner_run(sb, &p, &res);
        if (r < 0) {
                fprintf(stderr, "lockctl: cannot run the plugin: %s\n", strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        print_result(&res);
        return res.outcome == RUN_PLUGIN_ERROR ? LOCKCTL_EXIT_FAIL : LOCKCTL_EXIT_OK;

usage:
        fprintf(stderr, "usage: lockctl plugin test DIR FIXTURE [--input NAME=VALUE]...\n");
        return LOCKCTL_EXIT_USAGE;
}

int verb_plugin(int argc, char **argv) {
        if (argc >= 1 && strcmp(argv[0], "test") == 0)
                return verb_plugin_test(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "lint") == 0)
                return verb_plugin_lint(argc - 1, argv + 1);
        fprintf(stderr, "usage: lockctl plugin test|lint ...\n");
        return LOCKCTL_EXIT_USAGE;
}
