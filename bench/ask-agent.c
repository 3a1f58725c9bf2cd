/* ask-agent: the C side of bench/ask.py, so that the client is never what is measured. As an
 * agent it asks lockd (Submit, then Wait) back to back or with gaps, and pipelines cache hits;
 * as the alternatives it runs the plugin by bare fork+exec or under systemd-run --scope, with the
 * same gaps. Times are printed as one JSON object on stdout, in milliseconds. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "macro.h"

#define READ_MAX (16u << 20) /* one reply, at most */

typedef struct Conn {
        int fd;
        char *buf;
        size_t len, size;
        char *out;
        size_t out_len, out_size;
} Conn;

static int die(const char *what) {
        fprintf(stderr, "ask-agent: %s\n", what);
        exit(1);
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static void conn_open(Conn *c, const char *path) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};

        *c = (Conn){.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
        if (c->fd < 0 || strlen(path) >= sizeof(sa.sun_path))
                die("socket");
        memcpy(sa.sun_path, path, strlen(path));
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                die("cannot connect to lockd's agent socket");
}

/* Queues one call (NUL-terminated JSON); flushed by conn_flush(). */
static void conn_queue(Conn *c, const char *method, json_t *params, bool more) {
        json_t *m = json_pack("{s:s, s:o}", "method", method, "parameters", params);
        char *s;
        size_t n;

        if (!m)
                die("out of memory");
        if (more)
                json_object_set_new(m, "more", json_true());
        s = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        if (!s)
                die("out of memory");
        n = strlen(s) + 1;
        if (c->out_len + n > c->out_size) {
                c->out_size = (c->out_len + n) * 2;
                c->out = realloc(c->out, c->out_size);
                if (!c->out)
                        die("out of memory");
        }
        memcpy(c->out + c->out_len, s, n);
        c->out_len += n;
        free(s);
}

static void conn_flush(Conn *c) {
        size_t off = 0;

        while (off < c->out_len) {
                ssize_t k = write(c->fd, c->out + off, c->out_len - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        die("write to lockd");
                off += (size_t)k;
        }
        c->out_len = 0;
}

/* Whether a whole reply is buffered already. */
static bool conn_ready(const Conn *c) {
        return memchr(c->buf, 0, c->len) != NULL;
}

/* The next reply; its "parameters" are checked by the caller. */
static json_t *conn_read(Conn *c) {
        for (;;) {
                char *nul = c->len ? memchr(c->buf, 0, c->len) : NULL;
                if (nul) {
                        size_t n = (size_t)(nul - c->buf) + 1;
                        json_t *m = json_loads(c->buf, 0, NULL);
                        memmove(c->buf, c->buf + n, c->len - n);
                        c->len -= n;
                        if (!m)
                                die("lockd sent what is not JSON");
                        return m;
                }
                if (c->size - c->len < 65536) {
                        c->size = c->size ? c->size * 2 : 1 << 20;
                        if (c->size > READ_MAX)
                                die("a reply over 16 MiB");
                        c->buf = realloc(c->buf, c->size);
                        if (!c->buf)
                                die("out of memory");
                }
                ssize_t k = read(c->fd, c->buf + c->len, c->size - c->len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        die("lockd closed the connection");
                c->len += (size_t)k;
        }
}

static json_t *params_of(json_t *m, const char *what) {
        json_t *p = json_object_get(m, "parameters");

        if (!p || json_object_get(m, "error")) {
                char *s = json_dumps(m, JSON_COMPACT);
                fprintf(stderr, "ask-agent: %s: %s\n", what, s ? s : "?");
                exit(1);
        }
        return p;
}

static json_t *steps_of(const char *plugin, json_t *handles) {
        json_t *steps = json_array();
        size_t i;
        json_t *h;

        json_array_foreach(handles, i, h) json_array_append_new(
                steps, json_pack("{s:s, s:O}", "plugin", plugin, "handle", h));
        return json_pack("{s:o}", "steps", steps);
}

/* One question: Submit, then Wait with more until a final state; its step-0 result. */
static int ask_once(Conn *c, const char *plugin, json_t *handle) {
        json_t *one = json_pack("[O]", handle), *m, *p, *outcomes;
        char ticket[128];
        int result;

        conn_queue(c, "io.lockd.Agent.Submit", steps_of(plugin, one), false);
        json_decref(one);
        conn_flush(c);
        m = conn_read(c);
        p = params_of(m, "Submit");
        snprintf(ticket, sizeof(ticket), "%s", json_string_value(json_object_get(p, "ticket")));
        json_decref(m);
        conn_queue(c, "io.lockd.Agent.Wait", json_pack("{s:s}", "ticket", ticket), true);
        conn_flush(c);
        for (;;) {
                m = conn_read(c);
                p = params_of(m, "Wait");
                if (!json_is_true(json_object_get(m, "continues")))
                        break;
                json_decref(m);
        }
        if (strcmp(json_string_value(json_object_get(p, "state")) ?: "", "done") != 0)
                die("a ticket did not end done");
        outcomes = json_object_get(p, "outcomes");
        result = (int)json_integer_value(json_object_get(json_array_get(outcomes, 0), "result"));
        json_decref(m);
        return result;
}

/* Cache hits as fast as one connection takes them: tickets of the given steps, pipeline calls
 * in flight, a Wait after each Submit's reply. [tickets, answers, seconds]. */
static json_t *throughput(Conn *c, const char *plugin, json_t *handles, double seconds,
                          unsigned pipeline) {
        json_t *steps = steps_of(plugin, handles);
        char(*inflight)[128] = calloc(pipeline * 2 + 2, 128); /* "" a Submit, else a ticket */
        size_t head = 0, tail = 0, cap = pipeline * 2 + 2, n = 0;
        unsigned long tickets = 0, answers = 0;
        double t0 = bench_now_ms(), deadline = t0 + seconds * 1000;
        bool submitting = true;

        if (!steps || !inflight)
                die("out of memory");
        for (unsigned i = 0; i < pipeline; i++) {
                conn_queue(c, "io.lockd.Agent.Submit", json_deep_copy(steps), false);
                inflight[tail][0] = 0;
                tail = (tail + 1) % cap;
                n++;
        }
        conn_flush(c);
        while (n > 0) {
                json_t *m = conn_read(c), *p;
                char *kind = inflight[head];

                head = (head + 1) % cap;
                n--;
                if (!kind[0]) {
                        p = params_of(m, "Submit");
                        if (strcmp(json_string_value(json_object_get(p, "state")) ?: "", "done"))
                                die("a cache hit is not done at once");
                        snprintf(inflight[tail], 128, "%s",
                                 json_string_value(json_object_get(p, "ticket")));
                        conn_queue(c, "io.lockd.Agent.Wait",
                                   json_pack("{s:s}", "ticket", inflight[tail]), false);
                        tail = (tail + 1) % cap;
                        n++;
                } else {
                        json_t *o;
                        size_t i;

                        p = params_of(m, "Wait");
                        tickets++;
                        json_array_foreach(json_object_get(p, "outcomes"), i, o) {
                                json_int_t r = json_integer_value(json_object_get(o, "result"));
                                if (json_is_integer(json_object_get(o, "result")) &&
                                    (r == 0 || r == 1))
                                        answers++;
                        }
                        if (submitting && bench_now_ms() >= deadline)
                                submitting = false;
                        if (submitting) {
                                conn_queue(c, "io.lockd.Agent.Submit", json_deep_copy(steps),
                                           false);
                                inflight[tail][0] = 0;
                                tail = (tail + 1) % cap;
                                n++;
                        }
                }
                json_decref(m);
                if (!conn_ready(c))
                        conn_flush(c);
        }
        conn_flush(c);
        json_decref(steps);
        free(inflight);
        return json_pack("[i, i, f]", (json_int_t)tickets, (json_int_t)answers,
                         (bench_now_ms() - t0) / 1000);
}

/*
 * agent SOCKET: the work on stdin, {"plugin": NAME, "phases": [{"name", "kind": "questions",
 * "handles", "gap_ms"} | {"name", "kind": "throughput", "handles", "seconds", "pipeline"}]};
 * prints {"<name>": [ms, ...] | [tickets, answers, seconds]}, and for each questions phase
 * "<name>@spans": [[asked, answered], ...] in CLOCK_MONOTONIC milliseconds.
 */
static int cmd_agent(const char *path) {
        json_t *work = json_loadf(stdin, JSON_DISABLE_EOF_CHECK, NULL), *out = json_object(), *ph;
        const char *plugin;
        Conn c;
        size_t i;

        if (!work || !out)
                die("no work on stdin");
        plugin = json_string_value(json_object_get(work, "plugin"));
        if (!plugin)
                die("no plugin in the work");
        conn_open(&c, path);
        json_array_foreach(json_object_get(work, "phases"), i, ph) {
                const char *name = json_string_value(json_object_get(ph, "name")) ?: "?";
                const char *kind = json_string_value(json_object_get(ph, "kind")) ?: "";
                json_t *handles = json_object_get(ph, "handles");

                if (strcmp(kind, "throughput") == 0) {
                        json_object_set_new(
                                out, name,
                                throughput(&c, plugin, handles,
                                           json_number_value(json_object_get(ph, "seconds")),
                                           (unsigned)json_integer_value(
                                                   json_object_get(ph, "pipeline"))));
                        continue;
                }
                unsigned gap = (unsigned)json_integer_value(json_object_get(ph, "gap_ms"));
                json_t *times = json_array(), *spans = json_array(), *h;
                char spans_name[160];
                size_t k;

                json_array_foreach(handles, k, h) {
                        double t0, t1;
                        if (k > 0 && gap > 0)
                                sleep_ms(gap);
                        t0 = bench_now_ms();
                        if (ask_once(&c, plugin, h) != 1)
                                die("an answer that is not 1");
                        t1 = bench_now_ms();
                        json_array_append_new(times, json_real(t1 - t0));
                        /* When it was asked and answered (CLOCK_MONOTONIC, ms), so that the
                         * benchmark can place the kernel's events of each question in it. */
                        json_array_append_new(spans, json_pack("[f,f]", t0, t1));
                }
                json_object_set_new(out, name, times);
                snprintf(spans_name, sizeof(spans_name), "%s@spans", name);
                json_object_set_new(out, spans_name, spans);
        }
        json_dumpf(out, stdout, JSON_COMPACT);
        putchar('\n');
        close(c.fd);
        return 0;
}

/* exec GAP_MS FILE... -- ARGV...: fork+exec+wait of ARGV with fd 3 each FILE in turn. */
static int cmd_exec(int argc, char **argv) {
        unsigned gap = (unsigned)strtoul(argv[0], NULL, 10);
        int sep = 1, devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
        json_t *times = json_array();

        while (sep < argc && strcmp(argv[sep], "--") != 0)
                sep++;
        if (sep >= argc - 1 || devnull < 0)
                die("usage: exec GAP_MS FILE... -- ARGV...");
        for (int i = 1; i < sep; i++) {
                int in = open(argv[i], O_RDONLY | O_CLOEXEC), status = 0;
                double t0;

                if (in < 0)
                        die("cannot open a file");
                if (i > 1 && gap > 0)
                        sleep_ms(gap);
                t0 = bench_now_ms();
                if (bench_exec(argv + sep + 1, environ, in, devnull, &status) != 0)
                        die("the alternative did not answer 1");
                json_array_append_new(times, json_real(bench_now_ms() - t0));
                close(in);
        }
        json_dumpf(times, stdout, JSON_COMPACT);
        putchar('\n');
        return 0;
}

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "agent") == 0)
                return cmd_agent(argv[2]);
        if (argc >= 5 && strcmp(argv[1], "exec") == 0)
                return cmd_exec(argc - 2, argv + 2);
        fprintf(stderr, "usage: ask-agent agent SOCKET < WORK\n"
                        "       ask-agent exec GAP_MS FILE... -- ARGV...\n");
        return 2;
}
