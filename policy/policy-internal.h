/* Helpers shared by the lockd.yaml parser and printer; not part of the policy API. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Writes bytes as the largest exact unit ("64MiB", "4096"): what the parser reads back. */
void policy_format_size(uint64_t bytes, char *buf, size_t len);
/* Writes seconds as the largest exact unit ("15min", "8h", "90s"). */
void policy_format_duration(uint64_t sec, char *buf, size_t len);
