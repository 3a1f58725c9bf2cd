/* Tests of the one codec (common/codec.h): strict UTF-8 with its typed refusals, hex, base64 on
 * RFC 4648's vectors and its strictness, SHA-256 on FIPS 180-2's vectors, of a buffer and a
 * memfd alike. */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check-run.h"
#include "codec.h"

START_TEST(test_utf8) {
        static const struct {
                const char *s;
                int want; /* the length, or the Utf8Error */
                uint32_t cp;
        } cases[] = {
                {"A", 1, 'A'},
                {"\xc3\xa9", 2, 0xe9},
                {"\xe2\x82\xac", 3, 0x20ac},
                {"\xf0\x9f\x98\x80", 4, 0x1f600},
                {"\xf4\x8f\xbf\xbf", 4, 0x10ffff},
                {"\x80", UTF8_E_LEAD, 0},
                {"\xff", UTF8_E_LEAD, 0},
                {"\xf5\x80\x80\x80", UTF8_E_LEAD, 0},
                {"\xc0\xaf", UTF8_E_OVERLONG, 0},
                {"\xe0\x80\xaf", UTF8_E_OVERLONG, 0},
                {"\xf0\x80\x80\xaf", UTF8_E_OVERLONG, 0},
                {"\xed\xa0\x80", UTF8_E_SURROGATE, 0},
                {"\xf4\x90\x80\x80", UTF8_E_RANGE, 0},
                {"\xc3", UTF8_E_TRUNCATED, 0},
                {"\xe2\x82", UTF8_E_TRUNCATED, 0},
                {"\xc3\x28", UTF8_E_CONTINUATION, 0},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                uint32_t cp = 0;
                int r = utf8_decode(cases[i].s, strlen(cases[i].s), &cp);

                ck_assert_msg(r == cases[i].want, "case %zu: %d, want %d", i, r, cases[i].want);
                if (r > 0) {
                        char out[4];

                        ck_assert_uint_eq(cp, cases[i].cp);
                        ck_assert_uint_eq(utf8_encode(cp, out), (size_t)r);
                        ck_assert(memcmp(out, cases[i].s, (size_t)r) == 0);
                }
                ck_assert(utf8_valid(cases[i].s, strlen(cases[i].s)) == (r > 0));
        }
        /* NUL is a character like any other: which to refuse is the caller's rule. */
        ck_assert(utf8_valid("a\0b", 3));
        ck_assert(utf8_valid("", 0));
        ck_assert(!utf8_valid("ok \xed\xbf\xbf", 6));
        {
                char out[4];

                ck_assert_uint_eq(utf8_encode(0xd800, out), 0);
                ck_assert_uint_eq(utf8_encode(0x110000, out), 0);
        }
}
END_TEST

START_TEST(test_hex) {
        uint8_t in[] = {0x00, 0x7f, 0xab, 0xff}, out[4] = {1, 2, 3, 4};
        char text[9];

        hex_encode(in, sizeof(in), text);
        ck_assert_str_eq(text, "007fabff");
        ck_assert_int_eq(hex_decode("007FABff", 8, out, 4), 0);
        ck_assert(memcmp(in, out, 4) == 0);
        ck_assert(hex_lower_valid("007fabff", 8) && !hex_lower_valid("007FABff", 8));
        memset(out, 9, sizeof(out));
        ck_assert_int_eq(hex_decode("007fabf", 7, out, 4), -EBADMSG);
        ck_assert_int_eq(hex_decode("007fabfg", 8, out, 4), -EBADMSG);
        /* Untouched on failure, even when the bad digit comes last. */
        ck_assert_uint_eq(out[0], 9);
        ck_assert_int_eq(unhexchar('F'), 15);
        ck_assert_int_eq(unhexchar('g'), -1);
}
END_TEST

START_TEST(test_base64) {
        static const char *const vectors[][2] = {
                {"", ""},
                {"f", "Zg=="},
                {"fo", "Zm8="},
                {"foo", "Zm9v"},
                {"foob", "Zm9vYg=="},
                {"fooba", "Zm9vYmE="},
                {"foobar", "Zm9vYmFy"},
        };
        uint8_t out[16];
        size_t n;

        for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
                const char *plain = vectors[i][0], *text = vectors[i][1];
                char enc[16];

                ck_assert_uint_eq(base64_encoded_len(strlen(plain)), strlen(text));
                base64_encode(plain, strlen(plain), enc);
                ck_assert_str_eq(enc, text);
                ck_assert_int_eq(base64_decode(text, strlen(text), true, out, sizeof(out), &n), 0);
                ck_assert_uint_eq(n, strlen(plain));
                ck_assert(memcmp(out, plain, n) == 0);
        }
        /* Padding: optional unless required, complete when present. */
        ck_assert_int_eq(base64_decode("Zm8", 3, false, out, sizeof(out), &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_int_eq(base64_decode("Zm8", 3, true, out, sizeof(out), &n), -EBADMSG);
        ck_assert_int_eq(base64_decode("Zg=", 3, false, out, sizeof(out), &n), -EBADMSG);
        ck_assert_int_eq(base64_decode("Zg===", 5, false, out, sizeof(out), &n), -EBADMSG);
        /* One text per byte string: the unused bits must be zero. */
        ck_assert_int_eq(base64_decode("Zh==", 4, true, out, sizeof(out), &n), -EBADMSG);
        ck_assert_int_eq(base64_decode("Zm9=", 4, true, out, sizeof(out), &n), -EBADMSG);
        /* Nothing but the alphabet: no whitespace, no URL-safe symbols, no '=' inside. */
        ck_assert_int_eq(base64_decode("Zm 9v", 5, false, out, sizeof(out), &n), -EBADMSG);
        ck_assert_int_eq(base64_decode("Zm-_", 4, false, out, sizeof(out), &n), -EBADMSG);
        ck_assert_int_eq(base64_decode("Zg==Zm9v", 8, false, out, sizeof(out), &n), -EBADMSG);
        ck_assert_int_eq(base64_decode("Z", 1, false, out, sizeof(out), &n), -EBADMSG);
        /* More than the buffer holds. */
        ck_assert_int_eq(base64_decode("Zm9vYmFy", 8, true, out, 5, &n), -ENOBUFS);
}
END_TEST

START_TEST(test_sha256) {
        uint8_t d[SHA256_DIGEST_SIZE], f[SHA256_DIGEST_SIZE];
        char hex[SHA256_HEX_SIZE + 1];
        int fd;

        sha256_hex("abc", 3, hex);
        ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        sha256_hex("", 0, hex);
        ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

        /* A file of three chunks and a bit: the same digest from the fd. */
        fd = memfd_create("codec", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        {
                static char buf[3 * SHA256_FD_CHUNK + 17];

                memset(buf, 'x', sizeof(buf));
                ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
                sha256(buf, sizeof(buf), d);
        }
        ck_assert_int_eq(sha256_fd(fd, f), 0);
        ck_assert(memcmp(d, f, sizeof(d)) == 0);
        close(fd);
        ck_assert_int_eq(sha256_fd(STDIN_FILENO, f) < 0, 1);
}
END_TEST

static Suite *codec_suite(void) {
        Suite *s = suite_create("codec");

        suite_add_case(s, NULL, test_utf8);
        suite_add_case(s, NULL, test_hex);
        suite_add_case(s, NULL, test_base64);
        suite_add_case(s, NULL, test_sha256);
        return s;
}

int main(void) {
        return check_run(codec_suite());
}
