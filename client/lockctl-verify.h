/* lockctl verify-bundle: the sigstore-conformance CLI protocol. */
#pragma once

int verb_verify_bundle(int argc, char **argv);
