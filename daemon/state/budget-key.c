/* A budget's key (plugin, version, the sorted input-placeholder pairs): its checks, and its
 * canonical bytes, by which a budget's answers are found and compared. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "budget-internal.h"
#include "manifest.h"
#include "seal.h"

_Static_assert(BUDGET_NAME_MAX == SEAL_NAME_MAX, "one rule for placeholder names");

bool budget_name_valid(const char *name) {
        return seal_name_valid(name);
}

/* Whether field (size bytes) holds a NUL-terminated string. */
static bool terminated(const char *field, size_t size) {
        return memchr(field, 0, size) != NULL;
}

static bool plugin_valid(const char *plugin) {
        return plugin && strlen(plugin) <= BUDGET_PLUGIN_MAX && manifest_name_valid(plugin);
}

static bool version_valid(const char *version) {
        return version && strlen(version) <= BUDGET_VERSION_MAX && manifest_version_valid(version);
}

int budget_key_init(BudgetKey *k, const char *plugin, const char *version) {
        if (!k || !plugin_valid(plugin) || !version_valid(version))
                return -EINVAL;
        *k = (BudgetKey){};
        strcpy(k->plugin, plugin);
        strcpy(k->version, version);
        return 0;
}

int budget_key_add(BudgetKey *k, const char *input, const char *placeholder) {
        size_t i;

        if (!k || !budget_name_valid(input) || !budget_name_valid(placeholder))
                return -EINVAL;
        if (k->n_pairs > BUDGET_PAIRS_MAX)
                return -EINVAL;
        for (i = 0; i < k->n_pairs; i++) {
                int c = strcmp(k->pairs[i].input, input);

                if (c == 0)
                        return -EEXIST;
                if (c > 0)
                        break;
        }
        if (k->n_pairs == BUDGET_PAIRS_MAX)
                return -E2BIG;
        memmove(&k->pairs[i + 1], &k->pairs[i], (k->n_pairs - i) * sizeof(BudgetPair));
        k->pairs[i] = (BudgetPair){};
        strcpy(k->pairs[i].input, input);
        strcpy(k->pairs[i].placeholder, placeholder);
        k->n_pairs++;
        return 0;
}

bool budget_key_valid(const BudgetKey *k) {
        if (!k || !terminated(k->plugin, sizeof(k->plugin)) ||
            !terminated(k->version, sizeof(k->version)) || !manifest_name_valid(k->plugin) ||
            !manifest_version_valid(k->version) || k->n_pairs > BUDGET_PAIRS_MAX)
                return false;
        for (size_t i = 0; i < k->n_pairs; i++) {
                const BudgetPair *p = &k->pairs[i];

                if (!terminated(p->input, sizeof(p->input)) ||
                    !terminated(p->placeholder, sizeof(p->placeholder)) ||
                    !budget_name_valid(p->input) || !budget_name_valid(p->placeholder))
                        return false;
                /* Strictly ascending: sorted, and each input bound once. */
                if (i > 0 && strcmp(k->pairs[i - 1].input, p->input) >= 0)
                        return false;
        }
        return true;
}

/* Appends s and its NUL at out + *len. The caller sized out for KEY_BYTES_MAX. */
static void put_string(char *out, size_t *len, const char *s) {
        size_t n = strlen(s) + 1;

        memcpy(out + *len, s, n);
        *len += n;
}

/* The canonical bytes of a valid key. */
size_t budget_key_encode(const BudgetKey *k, char out[KEY_BYTES_MAX]) {
        size_t len = 0;

        put_string(out, &len, k->plugin);
        put_string(out, &len, k->version);
        for (size_t i = 0; i < k->n_pairs; i++) {
                put_string(out, &len, k->pairs[i].input);
                put_string(out, &len, k->pairs[i].placeholder);
        }
        return len;
}

/* The key back from its canonical bytes, which only budget_key_encode() made. */
void budget_key_decode(const char *bytes, size_t len, BudgetKey *k) {
        const char *p = bytes, *end = bytes + len;

        *k = (BudgetKey){};
        snprintf(k->plugin, sizeof(k->plugin), "%s", p);
        p += strlen(p) + 1;
        snprintf(k->version, sizeof(k->version), "%s", p);
        p += strlen(p) + 1;
        while (p < end && k->n_pairs < BUDGET_PAIRS_MAX) {
                BudgetPair *pair = &k->pairs[k->n_pairs++];

                snprintf(pair->input, sizeof(pair->input), "%s", p);
                p += strlen(p) + 1;
                snprintf(pair->placeholder, sizeof(pair->placeholder), "%s", p);
                p += strlen(p) + 1;
        }
}

/* FNV-1a over a key's bytes: only to skip most comparisons among one budget's at most 64 keys. */
uint64_t budget_key_hash(const char *bytes, size_t len) {
        uint64_t h = 0xcbf29ce484222325ULL;

        for (size_t i = 0; i < len; i++) {
                h ^= (uint8_t)bytes[i];
                h *= 0x100000001b3ULL;
        }
        return h;
}
