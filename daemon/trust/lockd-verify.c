/* lockd-verify: the short-lived helper lockd spawns to verify Sigstore bundles and trusted roots,
 * as nobody, without capabilities, under rlimits and a seccomp allow-list (verifier.h). */
#include "verifier.h"

#ifdef __SANITIZE_ADDRESS__
/* LeakSanitizer's exit-time scan needs ptrace and threads, which the helper's filter denies. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
        return "detect_leaks=0";
}
#endif

int main(void) {
        return verifier_helper_main();
}
