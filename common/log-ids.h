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
#define LOCKD_MESSAGE_PEER_DROPPED        "20d0e580937447be89ecf09dc1d004af"
#define LOCKD_MESSAGE_CAPABILITIES        "3c380a7a16304dd298b9c1824296962e"
#define LOCKD_MESSAGE_SCOPE_BACKEND_NONE  "2d424dcc80804ef5b1fb8d5f725115a8"
#define LOCKD_MESSAGE_SCOPE_FAILED        "c566975d403c48da9e7606f5ad9672c7"
#define LOCKD_MESSAGE_PLUGIN_INSTALLED    "8d15e6a23ecb4826930cf24672214101"
#define LOCKD_MESSAGE_PLUGIN_REMOVED      "c63e8431c6c3455383782af50e0c8969"
#define LOCKD_MESSAGE_PLUGIN_SKIPPED      "a9b50be49c8b4464b17f95a6a87f2afe"
#define LOCKD_MESSAGE_MARKETPLACE_ADDED   "f7c60c6c5ca541b0bd3154d713f26bcc"
#define LOCKD_MESSAGE_MARKETPLACE_REMOVED "9142738d814a4103bb677f7ae2e0a82f"
#define LOCKD_MESSAGE_RUN_FINISHED        "fc4197128551412a82dea6ceef12b19a"
#define LOCKD_MESSAGE_BUDGET_RESET        "8c9e216e7a444c60977a171518bada65"
#define LOCKD_MESSAGE_AGENT_UNCONFINED    "21e60ef19e8c4e0cba518c9b8f0cedb0"
#define LOCKD_MESSAGE_CONFINEMENT_OFF     "df248a59417540c28895ad0d763c791e"

/* The journal copy of each audit record (daemon/state/audit.c), one id per AuditEvent. */
#define LOCKD_MESSAGE_AUDIT_GRANT              "4e761faf3cd44ad49f70ccfa723a868b"
#define LOCKD_MESSAGE_AUDIT_REVOKE             "f5ebaef2aa9247788ef71e9b482c098d"
#define LOCKD_MESSAGE_AUDIT_SUBMIT             "4f4eb974a578489a8421123b00f5e8c2"
#define LOCKD_MESSAGE_AUDIT_APPROVE            "0c005d59626540d5af69ed7056293830"
#define LOCKD_MESSAGE_AUDIT_DENY               "ecf5ee6a9a574a3e9b6c1ac8d6ee8b2f"
#define LOCKD_MESSAGE_AUDIT_CANCEL             "b59803ffd1e24b3aa9974f4dd31d92d6"
#define LOCKD_MESSAGE_AUDIT_EXPIRE             "b68fafdcdb3f4cd7b6ee1d41cbbf5847"
#define LOCKD_MESSAGE_AUDIT_RUN                "69562f694d2f4ad081b964028f5f3c41"
#define LOCKD_MESSAGE_AUDIT_INSTALL            "f42c89f7f1324e6fb49c7aa683582a26"
#define LOCKD_MESSAGE_AUDIT_REMOVE             "2961015d91f148dbb80c9c519ed411fc"
#define LOCKD_MESSAGE_AUDIT_SESSION_START      "7d09ddbb88ff47478b59617c2b5ffc1f"
#define LOCKD_MESSAGE_AUDIT_SESSION_END        "58475859a80f473f9b1b8b40d89914ed"
#define LOCKD_MESSAGE_AUDIT_MARKETPLACE_ADD    "d6a47e696d6d42bdaacd4c4df96a45f0"
#define LOCKD_MESSAGE_AUDIT_MARKETPLACE_REMOVE "1b5d1513db1e40cf95b8dfc1712264c3"
#define LOCKD_MESSAGE_AUDIT_BUDGET_RESET       "d0a7135c1b8d4f829dc4db51933a20b4"
#define LOCKD_MESSAGE_AUDIT_RECOVERED          "0d908a0e31314833b4bc07b51b82d202"
#define LOCKD_MESSAGE_AUDIT_ROTATED            "49e39f4a8ea04d34b1f92d23478247af"
#define LOCKD_MESSAGE_AUDIT_DONE               "f4fee930321f4ef38a6737e86af89a40"
#define LOCKD_MESSAGE_AUDIT_BUDGET             "93cb2545d3f741de96a74adfff96c1a4"
#define LOCKD_MESSAGE_AUDIT_SEGMENT_REMOVED    "1cee08e12b1e493aba04b2ff7ce6f90e"
