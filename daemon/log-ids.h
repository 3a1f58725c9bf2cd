/* The journal MESSAGE_IDs of lockd's events, each documented in systemd/lockd.catalog. */
#pragma once

/*
 * Generated once with `systemd-id128 new` and fixed forever: tools and alerts match on them. A new
 * event gets a new id (and a catalog entry, which tests/cli/test-units.sh checks); an id is never
 * reused for another meaning.
 */
#define LOCKD_MESSAGE_STARTED             "f0be636c08d345d09720c92f01affeb1"
#define LOCKD_MESSAGE_STOPPING            "e6cc0b78178a4c3b858de425c0c1ab61"
#define LOCKD_MESSAGE_RELOADED            "bea5a0d6d01c42e9bf9bad639e93d192"
#define LOCKD_MESSAGE_RELOAD_FAILED       "214d4061077845e0bc73387802b2c4dd"
#define LOCKD_MESSAGE_PEER_REFUSED        "1be03e122ced4b9abee5318570e31c36"
#define LOCKD_MESSAGE_CONNECTION_LIMIT    "2d0d7bb50ea147b69db97ec23c51ad98"
#define LOCKD_MESSAGE_CAPABILITIES        "3c380a7a16304dd298b9c1824296962e"
#define LOCKD_MESSAGE_SCOPE_BACKEND_NONE  "2d424dcc80804ef5b1fb8d5f725115a8"
#define LOCKD_MESSAGE_SCOPE_FAILED        "c566975d403c48da9e7606f5ad9672c7"
#define LOCKD_MESSAGE_PLUGIN_INSTALLED    "8d15e6a23ecb4826930cf24672214101"
#define LOCKD_MESSAGE_PLUGIN_REMOVED      "c63e8431c6c3455383782af50e0c8969"
#define LOCKD_MESSAGE_PLUGIN_SKIPPED      "a9b50be49c8b4464b17f95a6a87f2afe"
#define LOCKD_MESSAGE_MARKETPLACE_ADDED   "f7c60c6c5ca541b0bd3154d713f26bcc"
#define LOCKD_MESSAGE_MARKETPLACE_REMOVED "9142738d814a4103bb677f7ae2e0a82f"
#define LOCKD_MESSAGE_RUN_FINISHED        "fc4197128551412a82dea6ceef12b19a"
