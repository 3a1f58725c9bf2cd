/* lockd.yaml: the strict parser, validator and printer of lockd's policy file. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define POLICY_BYTES_MAX          (256 * 1024) /* a larger lockd.yaml is refused before parsing */
#define POLICY_PRINCIPALS_MAX     64           /* per list: agents.users, consoles.groups, ... */
#define POLICY_MARKETPLACES_MAX   32
#define POLICY_NAME_MAX           32  /* a user or group name, as useradd(8) allows */
#define POLICY_SOCKET_PATH_MAX    107 /* sizeof(sun_path) minus the NUL */
#define POLICY_PATH_MAX           4095
#define POLICY_EPHEMERAL_UIDS_MAX (UINT32_C(1) << 20)
#define POLICY_DROPINS_MAX        64   /* drop-ins (lockd.yaml.d) merged onto lockd.yaml */
#define POLICY_KEYS_MAX           4096 /* keys set across all of a policy's files */

typedef enum PolicyError {
        POLICY_OK = 0,
        E_POLICY_TOO_LARGE,     /* over POLICY_BYTES_MAX */
        E_POLICY_SYNTAX,        /* not YAML, a NUL, invalid UTF-8 or a refused character */
        E_POLICY_UNSUPPORTED,   /* anchors, aliases, tags, directives, merge keys, documents */
        E_POLICY_DUPLICATE_KEY, /* also a marketplace name given twice */
        E_POLICY_UNKNOWN_KEY,
        E_POLICY_TYPE,          /* a value of the wrong YAML type (a list for a string, ...) */
        E_POLICY_RANGE,         /* a number, size, duration or count out of its range */
        E_POLICY_VALUE,         /* a well-typed value that breaks its rule (a relative path, ...) */
        E_POLICY_ROLES_OVERLAP, /* the same user or group among agents and consoles */
        E_POLICY_MISSING,       /* a required key of a marketplace is missing */
        _E_POLICY_MAX,
} PolicyError;

typedef struct PolicyDiag {
        PolicyError code;
        unsigned source; /* the index of the source the place is in (policy_parse_sources()) */
        unsigned line;   /* 1-based; 0 when the error has no place in the file */
        unsigned column; /* 1-based, in characters as libyaml counts them */
        char message[256];
} PolicyDiag;

/* A user or group of a role (or a socket's group): by number, or by a name NSS resolves later. */
typedef struct PolicyPrincipal {
        bool is_group;
        bool numeric; /* id is set, name is NULL; otherwise name is set and id is 0 */
        uint32_t id;
        char *name;
        unsigned line, column; /* where it was written; 0:0 for a compiled-in default */
        unsigned source;       /* the source it was written in (policy_parse_sources()) */
} PolicyPrincipal;

/* The users and groups of one role, in the order written (users and groups interleaved as
 * parsed; is_group tells them apart). */
typedef struct PolicyRole {
        PolicyPrincipal *principals;
        size_t n_principals;
        /* agents only: accept an agent only from a unit that cannot watch runs (ProtectProc=
         * invisible or noaccess, and no access to the cgroup file system). */
        bool require_confinement;
} PolicyRole;

typedef struct PolicySocket {
        char *path;  /* absolute, normalized, at most POLICY_SOCKET_PATH_MAX bytes */
        mode_t mode; /* 0600..0777 */
        bool has_group;
        PolicyPrincipal group; /* the socket's group when has_group (is_group is true) */
} PolicySocket;

typedef struct PolicyLimits {
        uint32_t max_plugins_per_handle;       /* 1..64 */
        uint32_t concurrent_runs;              /* 1..256 */
        uint32_t pending_tickets_per_agent;    /* 1..1024 */
        uint32_t connections_per_uid;          /* 1..1024 */
        uint32_t connections_total;            /* 1..65536, >= connections_per_uid: agents */
        uint32_t console_connections;          /* 1..1024: the console socket's own */
        uint64_t agent_idle_timeout_sec;       /* 1 s..1 d */
        uint64_t message_bytes;                /* 4 KiB..16 MiB */
        uint64_t session_idle_timeout_sec;     /* 1 s..30 d */
        uint64_t session_absolute_timeout_sec; /* 1 s..30 d, >= the idle timeout */
        uint64_t max_handle_bytes;             /* 1 KiB..4 GiB */
        uint64_t handle_store_bytes;           /* 1 MiB..1 TiB */
        uint64_t ticket_timeout_sec;           /* 1 s..30 d */
        uint64_t file_read_timeout_sec;        /* 1 s..1 h */
} PolicyLimits;

typedef enum PolicyScopeBackend {
        POLICY_SCOPE_SYSTEMD,
        POLICY_SCOPE_NONE,
        _POLICY_SCOPE_MAX,
} PolicyScopeBackend;

typedef enum PolicyBus {
        POLICY_BUS_SYSTEM,
        POLICY_BUS_USER,
        POLICY_BUS_ADDRESS, /* PolicyScope.bus_address */
        _POLICY_BUS_MAX,
} PolicyBus;

typedef struct PolicyScope {
        PolicyScopeBackend backend;
        PolicyBus bus;
        char *bus_address;          /* "unix:..." when bus is POLICY_BUS_ADDRESS, else NULL */
        char *slice;                /* a valid slice unit name, never "-.slice" */
        uint32_t cpu_quota_percent; /* 1..10000, 0 for no quota */
        uint32_t ahead;             /* 0..16: children waiting in scopes per limit class, at most */
} PolicyScope;

typedef struct PolicyAudit {
        uint64_t segment_bytes;   /* 64 KiB..4 GiB */
        uint32_t retain_segments; /* 0 (all)..100000 */
} PolicyAudit;

typedef struct PolicyMarketplace {
        char *name;         /* [a-z0-9][a-z0-9-]{0,63} */
        char *issuer;       /* https://... */
        char *identity;     /* a POSIX ERE that regcomp() accepts */
        char *trusted_root; /* absolute, normalized path */
        bool force;         /* the identity's lint warnings were accepted (force: true) */
        unsigned line, column;
        unsigned identity_line, identity_column;
} PolicyMarketplace;

#define POLICY_RELEASE_QUANTUM_MIN_MS 10
#define POLICY_RELEASE_QUANTUM_MAX_MS 60000

typedef struct Policy {
        unsigned security_level;     /* 1..3 */
        uint64_t release_quantum_ms; /* level 2's release quantum, 10 ms..60 s */
        PolicyRole agents;
        PolicyRole consoles;
        PolicySocket agent_socket;
        PolicySocket console_socket;
        char *state_directory;   /* absolute, normalized, not "/" */
        char *runtime_directory; /* absolute, normalized, not "/" */
        uint32_t ephemeral_uid_first, ephemeral_uid_last;
        PolicyLimits limits;
        PolicyScope scope;
        PolicyAudit audit;
        PolicyMarketplace *marketplaces;
        size_t n_marketplaces;
        bool allow_unsigned;
} Policy;

/*
 * Parses and validates buf (len bytes, not NUL-terminated) as lockd.yaml on top of the
 * compiled-in default: every key the file omits keeps its default (a list given replaces the
 * default list). Returns 0 and a new Policy in *ret, or a negative errno (-EINVAL for any policy
 * error, with *diag filled; -ENOMEM) and leaves *ret untouched. Pure: no I/O, no NSS, no logging.
 */
int policy_parse(const char *buf, size_t len, Policy **ret, PolicyDiag *diag);

/* One file of a policy: its name (for messages) and its bytes. */
typedef struct PolicySource {
        const char *name;
        const char *buf;
        size_t len;
} PolicySource;

/*
 * Parses lockd.yaml and its drop-ins as one policy: sources[0] is lockd.yaml, the others its
 * drop-ins in the order they are merged (name order), each parsed as policy_parse() parses a file
 * on top of what the ones before set. Mappings merge key by key; a key whose value is not a
 * mapping (a scalar, a list) set in two sources is E_POLICY_DUPLICATE_KEY at the second, its
 * message naming both sources and places: configuration management never silently overrides.
 * diag->source says which source an error is in. At most 1 + POLICY_DROPINS_MAX sources, each at
 * most POLICY_BYTES_MAX. Pure, as policy_parse().
 */
int policy_parse_sources(const PolicySource *sources, size_t n, Policy **ret, PolicyDiag *diag);

/* The compiled-in default policy (policy_default_yaml, parsed). 0, -ENOMEM or -EINVAL. */
int policy_default(Policy **ret);

/* The compiled-in default as YAML text (NUL-terminated), for documentation and tests. */
extern const char policy_default_yaml[];

Policy *policy_free(Policy *p);
static inline void policy_freep(Policy **p) {
        if (*p)
                policy_free(*p);
}

/*
 * Prints p as YAML, every key in schema order, so that policy_parse() of the output gives the
 * same policy back. 0 or a negative errno when writing fails.
 */
int policy_format(const Policy *p, FILE *f);

/* The code's name as documented ("E_POLICY_SYNTAX"); NULL for a value out of range. */
const char *policy_error_name(PolicyError e);
const char *policy_scope_backend_name(PolicyScopeBackend b);

/*
 * Calls fn once per lint warning of each marketplace the file accepted with force: true (the
 * identity's warnings, as identity_pattern_lint() gives them: at most 4 per marketplace), so
 * that every start and --check-config can say them again. Pure.
 */
struct IdentityWarning;
void policy_forced_warnings(const Policy *p,
                            void (*fn)(const PolicyMarketplace *m, const struct IdentityWarning *w,
                                       void *userdata),
                            void *userdata);

/* The policy's rule for user and group names: [a-z_][a-z0-9_-]*[$]?, 1..32 bytes. */
bool policy_principal_name_valid(const char *name);
