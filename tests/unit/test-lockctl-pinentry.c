/* Tests for client/lockctl-pinentry: Assuan's percent-escaping both ways, and lockctl's side of
 * the protocol against stand-in programs (shell scripts) that answer as a pinentry would, and as
 * a broken or hostile one would. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "lockctl-pinentry.h"
#include "macro.h"
#include "secmem.h"

static char dir[] = "/tmp/test-pinentry-XXXXXX";

/* Writes a stand-in pinentry: a shell script with body, made executable. Its path. */
static char *standin(const char *name, const char *body) {
        char *path;
        FILE *f;

        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "#!/bin/sh\n%s", body);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(chmod(path, 0755), 0);
        return path;
}

/* The answers of a well-behaved pinentry to every command but CONFIRM and GETPIN, whose answers
 * are the case's own: each line is read, logged to log, and answered. */
#define SERVE(log, confirm, getpin)                                                                \
        "echo 'OK Pleased to meet you'\n"                                                          \
        "while read -r line; do\n"                                                                 \
        "  echo \"$line\" >>" log "\n"                                                             \
        "  case $line in\n"                                                                        \
        "  CONFIRM*) " confirm ";;\n"                                                              \
        "  GETPIN*) " getpin ";;\n"                                                                \
        "  BYE*) echo OK; exit 0;;\n"                                                              \
        "  *) echo OK;;\n"                                                                         \
        "  esac\n"                                                                                 \
        "done\n"

START_TEST(test_escape) {
        char out[64];
        uint8_t v[16];
        size_t n = 0;

        ck_assert_int_eq(pinentry_escape("a%b\nc\rd_e", 9, false, out, sizeof(out)), 0);
        ck_assert_str_eq(out, "a%25b%0Ac%0Dd_e");
        ck_assert_int_eq(pinentry_escape("_Deny_", 6, true, out, sizeof(out)), 0);
        ck_assert_str_eq(out, "__Deny__");
        ck_assert_int_eq(pinentry_escape("\x01\x7f", 2, false, out, sizeof(out)), 0);
        ck_assert_str_eq(out, "%01%7F");
        /* The NUL ends the room: 4 bytes hold "a%2" at most, which is no escape. */
        ck_assert_int_eq(pinentry_escape("a%", 2, false, out, 4), -ENOBUFS);
        ck_assert_int_eq(pinentry_escape("a%", 2, false, out, 5), 0);

        ck_assert_int_eq(pinentry_unescape("x%25y%0a%41", 11, v, sizeof(v), &n), 0);
        ck_assert_uint_eq(n, 5);
        ck_assert_mem_eq(v, "x%y\nA", 5);
        n = 0;
        ck_assert_int_eq(pinentry_unescape("%4", 2, v, sizeof(v), &n), -EBADMSG);
        n = 0;
        ck_assert_int_eq(pinentry_unescape("%zz", 3, v, sizeof(v), &n), -EBADMSG);
        n = 0;
        ck_assert_int_eq(pinentry_unescape("abc", 3, v, 2, &n), -EOVERFLOW);
}
END_TEST

START_TEST(test_confirm_getpin) {
        _cleanup_free_ char *log = NULL, *prog = NULL, *text = NULL;
        _cleanup_secbuf_ SecBuf *v = NULL;
        Pinentry p;
        PinentryAnswer a = PINENTRY_CANCELED;
        size_t size = 0;
        FILE *f;

        ck_assert_int_ge(asprintf(&log, "%s/log", dir), 0);
        /* The value comes in two D lines, '%' escaped. */
        prog = standin("good", SERVE("\"$LOG\"", "echo OK",
                                     "echo 'D 50%25 of'; echo 'D %0Athe value'; echo OK"));
        setenv("LOG", log, 1);
        ck_assert_int_eq(pinentry_start(&p, prog, -1), 0);
        ck_assert_int_eq(
                pinentry_confirm(&p, "title", "line 1\nline 2 100%", "_Approve", "Deny", &a), 0);
        ck_assert_int_eq(a, PINENTRY_OK);
        ck_assert_int_eq(pinentry_getpin(&p, "t", "d", "needle (text):", 64, &a, &v), 0);
        ck_assert_int_eq(a, PINENTRY_OK);
        ck_assert_uint_eq(v->len, 16);
        ck_assert_mem_eq(v->data, "50% of\nthe value", 16);
        pinentry_done(&p);

        f = fopen(log, "r");
        ck_assert_ptr_nonnull(f);
        text = malloc(4096);
        size = fread(text, 1, 4095, f);
        text[size] = 0;
        fclose(f);
        ck_assert_ptr_nonnull(strstr(text, "SETDESC line 1%0Aline 2 100%25\n"));
        ck_assert_ptr_nonnull(strstr(text, "SETOK __Approve\n"));
        ck_assert_ptr_nonnull(strstr(text, "SETPROMPT needle (text):\nSETOK OK\n"));
        ck_assert_ptr_null(strstr(text, "SETKEYINFO"));
        ck_assert_ptr_null(strstr(text, "OPTION"));
        ck_assert_ptr_nonnull(strstr(text, "CONFIRM\n"));
        ck_assert_ptr_nonnull(strstr(text, "GETPIN\n"));
        ck_assert_ptr_nonnull(strstr(text, "BYE\n"));
}
END_TEST

START_TEST(test_cancel_and_errors) {
        _cleanup_free_ char *cancel = NULL, *timeout = NULL, *fully = NULL;
        _cleanup_secbuf_ SecBuf *v = NULL;
        PinentryAnswer a = PINENTRY_OK;
        Pinentry p;

        setenv("LOG", "/dev/null", 1);
        /* GPG_ERR_CANCELED from source pinentry: the human said no. */
        cancel = standin("cancel", SERVE("\"$LOG\"", "echo 'ERR 83886179 Operation cancelled'",
                                         "echo 'ERR 83886179 Operation cancelled'"));
        ck_assert_int_eq(pinentry_start(&p, cancel, -1), 0);
        ck_assert_int_eq(pinentry_confirm(&p, "t", "d", "ok", "no", &a), 0);
        ck_assert_int_eq(a, PINENTRY_CANCELED);
        a = PINENTRY_OK;
        ck_assert_int_eq(pinentry_getpin(&p, "t", "d", "p", 64, &a, &v), 0);
        ck_assert_int_eq(a, PINENTRY_CANCELED);
        ck_assert_ptr_null(v);
        pinentry_done(&p);
        /* A timeout (GPG_ERR_TIMEOUT, 62) is no answer: an error, never a cancel. */
        timeout = standin("timeout", SERVE("\"$LOG\"", "echo 'ERR 83886142 Timeout'",
                                           "echo 'ERR 83886142 Timeout'"));
        ck_assert_int_eq(pinentry_start(&p, timeout, -1), 0);
        ck_assert_int_eq(pinentry_confirm(&p, "t", "d", "ok", "no", &a), -EREMOTEIO);
        ck_assert_int_eq(pinentry_getpin(&p, "t", "d", "p", 64, &a, &v), -EREMOTEIO);
        pinentry_done(&p);
        /* "not confirmed" (the NOTOK button, 114) is a no too. */
        fully = standin("notok", SERVE("\"$LOG\"", "echo 'ERR 83886194 Not confirmed'", "echo OK"));
        ck_assert_int_eq(pinentry_start(&p, fully, -1), 0);
        ck_assert_int_eq(pinentry_confirm(&p, "t", "d", "ok", "no", &a), 0);
        ck_assert_int_eq(a, PINENTRY_CANCELED);
        /* An empty value (OK without D) is refused. */
        ck_assert_int_eq(pinentry_getpin(&p, "t", "d", "p", 64, &a, &v), -ENOMSG);
        pinentry_done(&p);
}
END_TEST

START_TEST(test_hostile) {
        _cleanup_free_ char *nogreet = NULL, *longline = NULL, *badd = NULL, *big = NULL,
                            *dconfirm = NULL, *inquire = NULL, *garbage = NULL, *dies = NULL;
        _cleanup_secbuf_ SecBuf *v = NULL;
        PinentryAnswer a;
        Pinentry p;

        setenv("LOG", "/dev/null", 1);
        /* Not Assuan at all. */
        nogreet = standin("nogreet", "echo 'hello there'\nsleep 5\n");
        ck_assert_int_eq(pinentry_start(&p, nogreet, -1), -EPROTO);
        /* The program is not there. */
        ck_assert_int_eq(pinentry_start(&p, "/nonexistent/pinentry", -1), -ENOENT);
        /* A line past the protocol's 1000 bytes. */
        longline =
                standin("long", SERVE("\"$LOG\"", "echo OK", "printf 'D %01200d\\n' 0; echo OK"));
        ck_assert_int_eq(pinentry_start(&p, longline, -1), 0);
        ck_assert_int_eq(pinentry_getpin(&p, "t", "d", "p", 2048, &a, &v), -EPROTO);
        pinentry_done(&p);
        /* A broken escape in the value. */
        badd = standin("badd", SERVE("\"$LOG\"", "echo OK", "echo 'D ab%4'; echo OK"));
        ck_assert_int_eq(pinentry_start(&p, badd, -1), 0);
        ck_assert_int_eq(pinentry_getpin(&p, "t", "d", "p", 64, &a, &v), -EBADMSG);
        pinentry_done(&p);
        /* A value longer than the caller's max: drained to its OK, refused. */
        big = standin("big", SERVE("\"$LOG\"", "echo OK",
                                   "echo 'D 0123456789'; echo 'D 0123456789'; echo OK"));
        ck_assert_int_eq(pinentry_start(&p, big, -1), 0);
        ck_assert_int_eq(pinentry_getpin(&p, "t", "d", "p", 15, &a, &v), -EOVERFLOW);
        ck_assert_ptr_null(v);
        /* ... and the next command's answer is read in step. */
        ck_assert_int_eq(pinentry_confirm(&p, "t", "d", "ok", "no", &a), 0);
        ck_assert_int_eq(a, PINENTRY_OK);
        pinentry_done(&p);
        /* Data where only OK or ERR may come (CONFIRM). */
        dconfirm = standin("dconfirm", SERVE("\"$LOG\"", "echo 'D yes'; echo OK", "echo OK"));
        ck_assert_int_eq(pinentry_start(&p, dconfirm, -1), 0);
        ck_assert_int_eq(pinentry_confirm(&p, "t", "d", "ok", "no", &a), -EPROTO);
        pinentry_done(&p);
        /* An INQUIRE is answered CAN; the program's ERR after it is no cancel. */
        inquire = standin("inquire", SERVE("\"$LOG\"", "echo OK",
                                           "echo 'INQUIRE PASSPHRASE'; read -r can; "
                                           "[ \"$can\" = CAN ] && echo 'ERR 83886179 cancelled' || "
                                           "echo 'D wrong'"));
        ck_assert_int_eq(pinentry_start(&p, inquire, -1), 0);
        ck_assert_int_eq(pinentry_getpin(&p, "t", "d", "p", 64, &a, &v), 0);
        ck_assert_int_eq(a, PINENTRY_CANCELED);
        pinentry_done(&p);
        /* A line the protocol does not have. */
        garbage = standin("garbage", SERVE("\"$LOG\"", "echo 'YES'", "echo OK"));
        ck_assert_int_eq(pinentry_start(&p, garbage, -1), 0);
        ck_assert_int_eq(pinentry_confirm(&p, "t", "d", "ok", "no", &a), -EPROTO);
        pinentry_done(&p);
        /* The program ends in the middle. */
        dies = standin("dies", SERVE("\"$LOG\"", "exit 0", "exit 0"));
        ck_assert_int_eq(pinentry_start(&p, dies, -1), 0);
        ck_assert_int_eq(pinentry_confirm(&p, "t", "d", "ok", "no", &a), -EPIPE);
        pinentry_done(&p);
}
END_TEST

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        (void)!system(cmd);
        memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

static Suite *pinentry_suite(void) {
        Suite *s = suite_create("lockctl-pinentry");
        const CaseOptions each = {.unchecked_setup = setup, .unchecked_teardown = teardown};

        suite_add_case(s, &each, test_escape);
        suite_add_case(s, &each, test_confirm_getpin);
        suite_add_case(s, &each, test_cancel_and_errors);
        suite_add_case(s, &each, test_hostile);
        return s;
}

int main(void) {
        return check_run(pinentry_suite());
}
