/* Example plugin (protocol 1): is the file valid UTF-8 text? Built with the C SDK. */
#include <stdint.h>
#include <stdlib.h>

#include "lockplugin.h"

/* Whether buf holds valid UTF-8: no overlongs, surrogates or code points past U+10FFFF. */
static bool utf8_ok(const uint8_t *s, size_t len) {
        size_t i = 0;

        while (i < len) {
                uint32_t cp;
                size_t n;

                if (s[i] < 0x80) {
                        i++;
                        continue;
                }
                if ((s[i] & 0xe0) == 0xc0) {
                        n = 1;
                        cp = s[i] & 0x1f;
                } else if ((s[i] & 0xf0) == 0xe0) {
                        n = 2;
                        cp = s[i] & 0x0f;
                } else if ((s[i] & 0xf8) == 0xf0) {
                        n = 3;
                        cp = s[i] & 0x07;
                } else {
                        return false;
                }
                if (len - i <= n)
                        return false;
                for (size_t k = 1; k <= n; k++) {
                        if ((s[i + k] & 0xc0) != 0x80)
                                return false;
                        cp = (cp << 6) | (s[i + k] & 0x3f);
                }
                if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
                    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
                i += n + 1;
        }
        return true;
}

int main(void) {
        size_t len;
        uint8_t *buf = lp_read_all(64u << 20, &len);

        if (!buf)
                lp_fail("cannot read the input");
        lp_answer(utf8_ok(buf, len));
}
