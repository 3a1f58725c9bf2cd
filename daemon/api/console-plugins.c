/* The Varlink handlers for plugins and marketplaces: the console's install, remove and lists, and
 * the agent's view of the catalog. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "console-files.h"
#include "console-reply.h"
#include "audit.h"
#include "catalog.h"
#include "console-plugins.h"
#include "index-versions.h"
#include "index.h"
#include "log.h"
#include "codec.h"
#include "macro.h"
#include "engine.h"
#include "marketplaces.h"
#include "spawner-link.h"

/* The largest fd index a call may name. */
#define FD_INDEX_MAX (VARLINK_FDS_PER_MESSAGE - 1)

/* A string parameter, or NULL when absent or null (the server checked its type). */
static const char *param_string(json_t *params, const char *key) {
        return json_string_value(json_object_get(params, key));
}

/* The uid of the call's peer, for the log; -1 once the peer is gone. */
static long peer_uid(VarlinkCall *call) {
        VarlinkConn *c = varlink_call_conn(call);
        const struct ucred *cred = c ? varlink_conn_peer(c) : NULL;

        return cred ? (long)cred->uid : -1;
}

static void hex32(const uint8_t d[32], char out[65]) {
        hex_encode(d, 32, out);
}

json_t *plugin_to_json(const CatalogPlugin *p, bool console) {
        const Manifest *m = p->release->manifest;
        _cleanup_(json_decrefp) json_t *o = NULL, *accepts = json_array(), *inputs = json_array();
        char msha[65], bsha[65];

        if (!accepts || !inputs)
                return NULL;
        for (size_t i = 0; i < m->n_accepts; i++)
                if (json_array_append_new(accepts, json_string(m->accepts[i])) < 0)
                        return NULL;
        for (size_t i = 0; i < m->n_inputs; i++)
                if (json_array_append_new(
                            inputs, json_pack("{s:s, s:s, s:I}", "name", m->inputs[i].name, "kind",
                                              input_kind_name(m->inputs[i].kind), "max_bytes",
                                              (json_int_t)m->inputs[i].max_bytes)) < 0)
                        return NULL;

        o = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:O, s:O}", "name", m->name, "version",
                      m->version, "protocol", (json_int_t)m->protocol, "question", m->question,
                      "one", m->one, "zero", m->zero, "accepts", accepts, "inputs", inputs);
        if (!o || !console)
                return TAKE_PTR(o);

        hex32(p->release->manifest_sha256, msha);
        hex32(p->release->binary_sha256, bsha);
        if (json_object_set_new(o, "detail", json_boolean(m->detail)) < 0 ||
            json_object_set_new(o, "limits",
                                json_pack("{s:I, s:I, s:I}", "cpu_s", (json_int_t)m->cpu_s,
                                          "memory_bytes", (json_int_t)m->memory_bytes, "timeout_s",
                                          (json_int_t)m->timeout_s)) < 0 ||
            json_object_set_new(o, "marketplace",
                                json_string(p->marketplace ? p->marketplace : "")) < 0 ||
            json_object_set_new(o, "manifest_sha256", json_string(msha)) < 0 ||
            json_object_set_new(o, "binary_sha256", json_string(bsha)) < 0 ||
            json_object_set_new(o, "signed", json_boolean(p->signed_)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

int console_plugins_list(VarlinkCall *call, const Manager *m, bool console) {
        _cleanup_(json_decrefp) json_t *plugins = json_array(), *reply = NULL;

        if (!plugins)
                return -ENOMEM;
        for (size_t i = 0; i < catalog_n(m->catalog); i++)
                if (json_array_append_new(plugins,
                                          plugin_to_json(catalog_get(m->catalog, i), console)) < 0)
                        return -ENOMEM;
        reply = json_pack("{s:O}", "plugins", plugins);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply, false);
}

/* The console's list: by name (the catalog's order), a page at a time (console-reply.h). */
static int method_list_plugins(VarlinkCall *call, json_t *params, void *userdata) {
        const Manager *m = userdata;
        _cleanup_(list_page_done) ListPage page = {};
        int r;

        if (list_page_init(&page, params) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < catalog_n(m->catalog); i++) {
                const CatalogPlugin *p = catalog_get(m->catalog, i);
                const char *name = p->release->manifest->name;

                if (!list_page_wants(&page, name))
                        continue;
                r = list_page_add(&page, plugin_to_json(p, true), name);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
        }
        return reply_ok(call, list_page_reply(&page, "plugins"));
}

/*
 * Takes the fd whose index the parameter key holds, when present: *ret is -1 when the parameter
 * is absent. The fd is the peer's, opened with its own rights: it must be a regular file open for
 * reading (not O_PATH, not write-only), so nothing reading it can block on a FIFO or socket or
 * read a directory. 0, or a negative errno with *reason set to a sentence for InvalidRequest.
 */
static int take_file_fd(VarlinkCall *call, json_t *params, const char *key, int *ret, char *reason,
                        size_t reason_size) {
        _cleanup_close_ int fd = -1;
        json_t *v = json_object_get(params, key);
        struct stat st;
        int flags;

        *ret = -1;
        if (!json_is_integer(v))
                return 0;
        fd = varlink_call_take_fd(call, json_integer_value(v));
        if (fd < 0) {
                snprintf(reason, reason_size, "%s: no fd %lld in this call, or one taken twice",
                         key, (long long)json_integer_value(v));
                return -EBADF;
        }
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                snprintf(reason, reason_size, "%s: not a regular file", key);
                return -EBADFD;
        }
        if ((flags & O_PATH) || (flags & O_ACCMODE) == O_WRONLY) {
                snprintf(reason, reason_size, "%s: not open for reading", key);
                return -EBADF;
        }
        *ret = TAKE_FD(fd);
        return 0;
}

typedef struct InstallFds {
        int manifest, binary, manifest_bundle, binary_bundle, index, index_bundle;
} InstallFds;

static void install_fds_done(InstallFds *f) {
        safe_close(f->manifest);
        safe_close(f->binary);
        safe_close(f->manifest_bundle);
        safe_close(f->binary_bundle);
        safe_close(f->index);
        safe_close(f->index_bundle);
}

static const char *install_status_name(CatalogInstallStatus s) {
        switch (s) {
        case CATALOG_INSTALLED:
                return "installed";
        case CATALOG_VERIFICATION_FAILED:
                return "verification failed";
        case CATALOG_NEEDS_TYPED_NAME:
                return "needs the typed name";
        case CATALOG_UPDATE_REFUSED:
                return "update refused";
        case CATALOG_STORE_FAILED:
                return "store failed";
        case CATALOG_SANDBOX_FAILED:
                return "sandbox failed";
        }
        return "unknown";
}

/* Answers a refused install with the error the interface names for it. */
static int reply_install_failure(VarlinkCall *call, const CatalogInstallResult *res, int r) {
        const Manifest *nm = res->manifest;
        char reason[320];

        switch (res->status) {
        case CATALOG_NEEDS_TYPED_NAME:
                return reply_error(call, CONSOLE_ERROR("UpdateNeedsTypedName"),
                                   json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", nm->name,
                                             "installed", res->installed, "version", nm->version,
                                             "question", nm->question, "one", nm->one, "zero",
                                             nm->zero));
        case CATALOG_UPDATE_REFUSED:
                return reply_error(call, CONSOLE_ERROR("UpdateRefused"),
                                   json_pack("{s:s, s:s, s:s}", "reason",
                                             update_verdict_name(res->verdict), "installed",
                                             res->installed, "version", nm->version));
        case CATALOG_STORE_FAILED:
                snprintf(reason, sizeof(reason), "the plugin store: %s: %s",
                         store_error_name(res->store_error.code), res->store_error.message);
                return reply_unavailable(call, reason);
        case CATALOG_SANDBOX_FAILED:
                snprintf(reason, sizeof(reason), "the plugin cannot be sandboxed: %s",
                         plugin_image_strerror(res->sandbox_error));
                return reply_unavailable(call, reason);
        case CATALOG_VERIFICATION_FAILED:
        default:
                if (r == -ENOMEM)
                        return r;
                return reply_error(call, CONSOLE_ERROR("VerificationFailed"),
                                   json_pack("{s:s, s:s}", "code",
                                             release_error_name(res->release_error.code), "message",
                                             res->release_error.message));
        }
}

/*
 * The audit record of a change to what may run or be trusted (fields taken). The change is on
 * disk already and stands: a record that cannot be written is logged as an error, so the journal
 * tells the human the chain misses a change to the catalog.
 */
static void audit_change(Manager *m, AuditEvent ev, json_t *fields) {
        _cleanup_(json_decrefp) json_t *f = fields;
        int r = f ? audit_append(m->audit, ev, f) : -ENOMEM;

        if (r < 0)
                log_error_errno(r, NULL, "the audit record of a %s could not be written: %m",
                                audit_event_to_string(ev));
}

/*
 * Verifies the index (index_fds: sealed copies) of marketplace mk in the verification helper and
 * admits it only when fresh (index-versions.h: not older than the newest verified for mk, not
 * expired), recording a newer version durably first. 0 and *ret; or 1 after answering the call
 * with the refusal's named error (VerificationFailed, IndexRollback, IndexExpired, Unavailable);
 * or -ENOMEM. Every use of an index goes through here, so neither a search nor an install ever
 * acts on an index lockd would refuse.
 */
static int index_admit(VarlinkCall *call, Manager *m, const MarketplaceEntry *mk,
                       const int index_fds[2], VerifiedIndex *ret) {
        IndexFreshness verdict = INDEX_FRESH;
        ReleaseError err = {};
        VerifiedIndex vi = {};
        char expires[INDEX_TIME_SIZE] = "", reason[200];
        uint64_t newest = 0;
        int r;

        r = verifier_verify_index(&mk->marketplace, mk->trusted_root_fd, mk->trusted_root_digest,
                                  index_fds, &vi, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_struct_errno(LOG_NOTICE, r, NULL,
                                 LOG_FIELDS(LOG_FIELD("MARKETPLACE", mk->marketplace.name),
                                            LOG_FIELD_U64("PEER_UID", peer_uid(call))),
                                 "index of marketplace %s refused: %s", mk->marketplace.name,
                                 err.message);
                r = reply_error(call, CONSOLE_ERROR("VerificationFailed"),
                                json_pack("{s:s, s:s}", "code", release_error_name(err.code),
                                          "message", err.message));
                return r < 0 ? r : 1;
        }
        (void)index_format_time(vi.expires, expires);
        r = index_versions_admit(m->state_fd, mk->marketplace.name, &vi, (int64_t)time(NULL),
                                 &verdict, &newest);
        if (r == -ESTALE || r == -ETIME) {
                log_struct(LOG_WARNING, NULL,
                           LOG_FIELDS(LOG_FIELD("MARKETPLACE", mk->marketplace.name),
                                      LOG_FIELD_U64("INDEX_VERSION", vi.version),
                                      LOG_FIELD_U64("PEER_UID", peer_uid(call))),
                           "index of marketplace %s refused: %s (version %llu, newest verified "
                           "%llu, expires %s)",
                           mk->marketplace.name, verdict == INDEX_ROLLBACK ? "rollback" : "expired",
                           (unsigned long long)vi.version, (unsigned long long)newest, expires);
                r = verdict == INDEX_ROLLBACK
                            ? reply_error(call, CONSOLE_ERROR("IndexRollback"),
                                          json_pack("{s:s, s:I, s:I}", "marketplace",
                                                    mk->marketplace.name, "version",
                                                    (json_int_t)vi.version, "newest",
                                                    (json_int_t)newest))
                            : reply_error(call, CONSOLE_ERROR("IndexExpired"),
                                          json_pack("{s:s, s:I, s:s}", "marketplace",
                                                    mk->marketplace.name, "version",
                                                    (json_int_t)vi.version, "expires", expires));
                return r < 0 ? r : 1;
        }
        if (r < 0) {
                if (r == -ENOMEM)
                        return r;
                snprintf(reason, sizeof(reason), "the index version record of %s: %s",
                         mk->marketplace.name, strerror(-r));
                r = reply_unavailable(call, reason);
                return r < 0 ? r : 1;
        }
        *ret = vi;
        return 0;
}

/* A reply given instead of the method's work: the method returns r < 0 ? r : 0. */
static int answered(int r) {
        return r < 0 ? r : 1;
}

/* The install's fds, taken into f once the parameters' shape holds; *ret_index: an index came.
 * 0, or answered (1 or a negative errno) as index_admit(). */
static int install_take_fds(VarlinkCall *call, json_t *params, InstallFds *f, bool *ret_index) {
        const char *marketplace = param_string(params, "marketplace");
        bool bundles, some_bundle, index, some_index;
        char reason[160];
        int r;

        /* The shape first: signed (marketplace and both bundles) or unsigned (none of them), and
         * the index complete or absent, before any fd is looked at. */
        bundles = json_is_integer(json_object_get(params, "manifest_bundle_fd")) &&
                  json_is_integer(json_object_get(params, "binary_bundle_fd"));
        some_bundle = json_is_integer(json_object_get(params, "manifest_bundle_fd")) ||
                      json_is_integer(json_object_get(params, "binary_bundle_fd"));
        index = json_is_integer(json_object_get(params, "index_fd")) &&
                json_is_integer(json_object_get(params, "index_bundle_fd"));
        some_index = json_is_integer(json_object_get(params, "index_fd")) ||
                     json_is_integer(json_object_get(params, "index_bundle_fd"));
        if (some_bundle != bundles || (marketplace != NULL) != bundles)
                return answered(reply_invalid_request(
                        call, "marketplace, manifest_bundle_fd and binary_bundle_fd go together"));
        if (some_index != index)
                return answered(
                        reply_invalid_request(call, "index_fd and index_bundle_fd go together"));
        if (index && !marketplace)
                return answered(reply_invalid_request(call, "an index needs a marketplace"));

        static const struct {
                const char *key;
                size_t offset;
        } fd_params[] = {
                {"manifest_fd", offsetof(InstallFds, manifest)},
                {"binary_fd", offsetof(InstallFds, binary)},
                {"manifest_bundle_fd", offsetof(InstallFds, manifest_bundle)},
                {"binary_bundle_fd", offsetof(InstallFds, binary_bundle)},
                {"index_fd", offsetof(InstallFds, index)},
                {"index_bundle_fd", offsetof(InstallFds, index_bundle)},
        };
        for (size_t i = 0; i < ELEMENTSOF(fd_params); i++) {
                r = take_file_fd(call, params, fd_params[i].key,
                                 (int *)((char *)f + fd_params[i].offset), reason, sizeof(reason));
                if (r < 0)
                        return answered(reply_invalid_request(call, reason));
        }

        *ret_index = index;
        return 0;
}

/* An install done: logged, recorded, and answered with the plugin (and what it replaced). Frees
 * res. */
static int install_succeeded(VarlinkCall *call, Manager *m, const char *marketplace,
                             CatalogInstallResult *res) {
        _cleanup_(json_decrefp) json_t *reply = NULL, *plugin = NULL;

        spawner_link_warm(m->spawner, &res->plugin->image.spec.limits);
        log_struct(
                LOG_NOTICE, LOCKD_MESSAGE_PLUGIN_INSTALLED,
                LOG_FIELDS(LOG_FIELD("PLUGIN", res->plugin->release->manifest->name),
                           LOG_FIELD("PLUGIN_VERSION", res->plugin->release->manifest->version),
                           LOG_FIELD("MARKETPLACE", marketplace),
                           LOG_FIELD("REPLACED_VERSION", res->replaced[0] ? res->replaced : NULL),
                           LOG_FIELD_U64("PEER_UID", peer_uid(call))),
                "plugin %s %s installed (%s)%s%s", res->plugin->release->manifest->name,
                res->plugin->release->manifest->version, marketplace ? marketplace : "unsigned",
                res->replaced[0] ? ", replacing " : "", res->replaced);

        {
                char msha[65], bsha[65];

                hex32(res->plugin->release->manifest_sha256, msha);
                hex32(res->plugin->release->binary_sha256, bsha);
                audit_change(m, AUDIT_INSTALL,
                             json_pack("{s:s, s:s, s:s?, s:s, s:s, s:b, s:s?, s:I}", "plugin",
                                       res->plugin->release->manifest->name, "version",
                                       res->plugin->release->manifest->version, "marketplace",
                                       marketplace, "manifest_sha256", msha, "binary_sha256", bsha,
                                       "signed", res->plugin->signed_, "replaced",
                                       res->replaced[0] ? res->replaced : NULL, "peer_uid",
                                       (json_int_t)peer_uid(call)));
        }
        plugin = plugin_to_json(res->plugin, true);
        if (!plugin) {
                catalog_install_result_done(res);
                return -ENOMEM;
        }
        reply = json_pack("{s:O}", "plugin", plugin);
        if (reply && res->replaced[0] &&
            json_object_set_new(reply, "replaced", json_string(res->replaced)) < 0)
                reply = (json_decref(reply), NULL);
        catalog_install_result_done(res);
        return reply_ok(call, TAKE_PTR(reply));
}

static int method_install_plugin_files(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        _cleanup_(install_fds_done) InstallFds f = {-1, -1, -1, -1, -1, -1};
        const char *marketplace = param_string(params, "marketplace");
        const char *accept_name = param_string(params, "accept_name");
        const MarketplaceEntry *mk = NULL;
        CatalogInstallResult res = {};
        bool index;
        int r;

        r = install_take_fds(call, params, &f, &index);
        if (r != 0)
                return r < 0 ? r : 0;

        if (marketplace) {
                mk = marketplaces_find(m->marketplaces, marketplace);
                if (!mk)
                        return reply_error(call, CONSOLE_ERROR("UnknownMarketplace"),
                                           json_pack("{s:s}", "name", marketplace));
        } else if (!manager_allow_unsigned(m))
                return varlink_call_error(call, CONSOLE_ERROR("UnsignedRefused"), NULL);

        /* An index must be fresh before it vouches for a release: a rolled back or expired one
         * could list a release its publisher has since withdrawn. */
        if (index) {
                VerifiedIndex vi;

                r = index_admit(call, m, mk, (const int[2]){f.index, f.index_bundle}, &vi);
                if (r != 0)
                        return r < 0 ? r : 0;
        }

        r = catalog_install(m->catalog, m->state_fd, mk,
                            &(const ReleaseFds){.manifest = f.manifest,
                                                .binary = f.binary,
                                                .manifest_bundle = f.manifest_bundle,
                                                .binary_bundle = f.binary_bundle},
                            (const int[2]){f.index, f.index_bundle}, accept_name, &res);
        if (r < 0) {
                log_struct_errno(
                        LOG_NOTICE, r, NULL,
                        LOG_FIELDS(LOG_FIELD("MARKETPLACE", marketplace),
                                   LOG_FIELD_U64("PEER_UID", peer_uid(call))),
                        "plugin install from %s not done: %s%s%s",
                        marketplace ? marketplace : "(unsigned)", install_status_name(res.status),
                        res.status == CATALOG_VERIFICATION_FAILED ? ": " : "",
                        res.status == CATALOG_VERIFICATION_FAILED ? res.release_error.message : "");
                r = reply_install_failure(call, &res, r);
                catalog_install_result_done(&res);
                return r;
        }

        return install_succeeded(call, m, marketplace, &res);
}

/* The files are copied off the loop first (console-files.h): a hung file never stops lockd. */
static int method_install_plugin(VarlinkCall *call, json_t *params, void *userdata) {
        return console_read_files_then(
                call, params, userdata, RELEASE_BINARY_MAX,
                "a file of the release is larger than the release caps allow",
                method_install_plugin_files);
}

static int method_remove_plugin(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *name = param_string(params, "name");
        const char *version = param_string(params, "version");
        char reason[160];
        int r;

        if (version && !manifest_version_valid(version))
                return reply_invalid_request(call, "version is not MAJOR.MINOR.PATCH");
        /* A name no plugin can have is as unknown as one not installed. */
        r = manifest_name_valid(name) ? catalog_remove(m->catalog, m->state_fd, name, version)
                                      : -ENOENT;
        if (r == -ENOENT)
                return reply_error(call, CONSOLE_ERROR("UnknownPlugin"),
                                   json_pack("{s:s}", "name", name));
        if (r < 0) {
                snprintf(reason, sizeof(reason), "the plugin store: %s", strerror(-r));
                return reply_unavailable(call, reason);
        }
        log_struct(LOG_NOTICE, LOCKD_MESSAGE_PLUGIN_REMOVED,
                   LOG_FIELDS(LOG_FIELD("PLUGIN", name), LOG_FIELD("PLUGIN_VERSION", version),
                              LOG_FIELD_U64("PEER_UID", peer_uid(call))),
                   "plugin %s%s%s removed", name, version ? " " : "", version ? version : "");
        audit_change(m, AUDIT_REMOVE,
                     json_pack("{s:s, s:s?, s:I}", "plugin", name, "version", version, "peer_uid",
                               (json_int_t)peer_uid(call)));
        return varlink_call_reply(call, NULL, false);
}

/* A marketplace for ListMarketplaces: its url and the newest index version verified for it only
 * when it has them (a record that cannot be read shows as none). */
static json_t *marketplace_to_json(const MarketplaceEntry *e, int statefd) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", e->marketplace.name, "issuer",
                              e->marketplace.issuer, "identity", e->marketplace.identity_pattern,
                              "trusted_root_sha256", e->trusted_root_sha256, "source",
                              marketplace_source_name(e->source));
        uint64_t newest = 0;

        if (o && e->url && json_object_set_new(o, "url", json_string(e->url)) < 0)
                return json_decref(o), NULL;
        if (o && index_versions_get(statefd, e->marketplace.name, &newest) >= 0 && newest > 0 &&
            json_object_set_new(o, "index_version", json_integer((json_int_t)newest)) < 0)
                return json_decref(o), NULL;
        return o;
}

static int marketplace_by_name(const void *a, const void *b) {
        return strcmp((*(const MarketplaceEntry *const *)a)->marketplace.name,
                      (*(const MarketplaceEntry *const *)b)->marketplace.name);
}

/* The marketplaces sorted by name, a page at a time (console-reply.h). */
static int method_list_marketplaces(VarlinkCall *call, json_t *params, void *userdata) {
        const Manager *m = userdata;
        _cleanup_(list_page_done) ListPage page = {};
        _cleanup_free_ const MarketplaceEntry **all = NULL;
        size_t n = marketplaces_n(m->marketplaces);
        int r;

        if (list_page_init(&page, params) < 0)
                return -ENOMEM;
        all = calloc(n ?: 1, sizeof(*all));
        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                all[i] = marketplaces_get(m->marketplaces, i);
        qsort(all, n, sizeof(*all), marketplace_by_name);
        for (size_t i = 0; i < n; i++) {
                const char *name = all[i]->marketplace.name;

                if (!list_page_wants(&page, name))
                        continue;
                r = list_page_add(&page, marketplace_to_json(all[i], m->state_fd), name);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
        }
        return reply_ok(call, list_page_reply(&page, "marketplaces"));
}

static json_t *strv_to_json(char **v) {
        json_t *a = json_array();

        for (size_t i = 0; a && v && v[i]; i++)
                if (json_array_append_new(a, json_string(v[i])) < 0)
                        a = (json_decref(a), NULL);
        return a;
}

static int method_add_marketplace_files(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *name = param_string(params, "name");
        const char *issuer = param_string(params, "issuer");
        const char *identity = param_string(params, "identity");
        const char *url = param_string(params, "url");
        bool force = json_is_true(json_object_get(params, "force"));
        _cleanup_close_ int root_fd = -1;
        char **warnings = NULL;
        const char *why = "invalid";
        char reason[160];
        json_t *w;
        int r;

        r = take_file_fd(call, params, "trusted_root_fd", &root_fd, reason, sizeof(reason));
        if (r < 0)
                return reply_invalid_request(call, reason);

        r = marketplaces_add(m->marketplaces, m->state_fd, name, issuer, identity, url, root_fd,
                             force, &warnings, &why);
        switch (r) {
        case 0:
                break;
        case -EEXIST:
                return reply_error(call, CONSOLE_ERROR("MarketplaceExists"),
                                   json_pack("{s:s}", "name", name));
        case -EINVAL:
                return reply_invalid_request(call, why);
        case -EAGAIN:
                w = strv_to_json(warnings);
                marketplace_warnings_free(warnings);
                return reply_error(call, CONSOLE_ERROR("LintWarnings"),
                                   w ? json_pack("{s:o}", "warnings", w) : NULL);
        case -ENOSPC:
                return reply_unavailable(call, "too many marketplaces");
        case -EPROTO:
                return reply_unavailable(call, why);
        case -ENOMEM:
                return r;
        default:
                snprintf(reason, sizeof(reason), "the state directory: %s", strerror(-r));
                return reply_unavailable(call, reason);
        }

        log_struct(LOG_NOTICE, LOCKD_MESSAGE_MARKETPLACE_ADDED,
                   LOG_FIELDS(LOG_FIELD("MARKETPLACE", name), LOG_FIELD("ISSUER", issuer),
                              LOG_FIELD("IDENTITY", identity), LOG_FIELD("MARKETPLACE_URL", url),
                              LOG_FIELD_U64("PEER_UID", peer_uid(call))),
                   "marketplace %s added%s", name,
                   warnings && warnings[0] ? " despite lint warnings (forced)" : "");
        audit_change(m, AUDIT_MARKETPLACE_ADD,
                     json_pack("{s:s, s:s, s:s, s:s?, s:b, s:I}", "marketplace", name, "issuer",
                               issuer, "identity", identity, "url", url, "forced",
                               warnings && warnings[0] ? 1 : 0, "peer_uid",
                               (json_int_t)peer_uid(call)));
        w = strv_to_json(warnings);
        marketplace_warnings_free(warnings);
        return reply_ok(call, w ? json_pack("{s:o}", "warnings", w) : NULL);
}

/* The files are copied off the loop first (console-files.h): a hung file never stops lockd. */
static int method_add_marketplace(VarlinkCall *call, json_t *params, void *userdata) {
        return console_read_files_then(call, params, userdata, MARKETPLACE_ROOT_MAX,
                                       "the trusted root is larger than 1 MiB",
                                       method_add_marketplace_files);
}

static int method_verify_index_files(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *marketplace = param_string(params, "marketplace");
        _cleanup_close_ int index = -1, bundle = -1, index_snap = -1, bundle_snap = -1;
        const MarketplaceEntry *mk;
        VerifiedIndex vi = {};
        ReleaseError err = {};
        char reason[160], expires[INDEX_TIME_SIZE] = "", sha[65];
        int r;

        r = take_file_fd(call, params, "index_fd", &index, reason, sizeof(reason));
        if (r >= 0)
                r = take_file_fd(call, params, "index_bundle_fd", &bundle, reason, sizeof(reason));
        if (r < 0)
                return reply_invalid_request(call, reason);
        mk = marketplaces_find(m->marketplaces, marketplace);
        if (!mk)
                return reply_error(call, CONSOLE_ERROR("UnknownMarketplace"),
                                   json_pack("{s:s}", "name", marketplace));
        /* Sealed first, as an install's index is (catalog.c): the helper and lockd's digest
         * read the same bytes, which nobody can change meanwhile. */
        index_snap = release_snapshot_fd(index, INDEX_BYTES_MAX, INDEX_FILE, NULL);
        bundle_snap = index_snap < 0 ? index_snap
                                     : release_snapshot_fd(bundle, RELEASE_BUNDLE_MAX,
                                                           INDEX_BUNDLE_FILE, NULL);
        if (index_snap == -ENOMEM || bundle_snap == -ENOMEM)
                return -ENOMEM;
        if (index_snap < 0 || bundle_snap < 0) {
                release_error_set(&err,
                                  index_snap == -EFBIG || bundle_snap == -EFBIG
                                          ? RELEASE_E_TOO_LARGE
                                          : RELEASE_E_IO,
                                  "%s: %s", index_snap < 0 ? INDEX_FILE : INDEX_BUNDLE_FILE,
                                  strerror(-(index_snap < 0 ? index_snap : bundle_snap)));
                return reply_error(call, CONSOLE_ERROR("VerificationFailed"),
                                   json_pack("{s:s, s:s}", "code", release_error_name(err.code),
                                             "message", err.message));
        }
        r = index_admit(call, m, mk, (const int[2]){index_snap, bundle_snap}, &vi);
        if (r != 0)
                return r < 0 ? r : 0;
        (void)index_format_time(vi.expires, expires);
        hex32(vi.sha256, sha);
        return reply_ok(call, json_pack("{s:I, s:s, s:s}", "version", (json_int_t)vi.version,
                                        "expires", expires, "sha256", sha));
}

/* The files are copied off the loop first (console-files.h): a hung file never stops lockd. */
static int method_verify_index(VarlinkCall *call, json_t *params, void *userdata) {
        return console_read_files_then(call, params, userdata, INDEX_BYTES_MAX,
                                       "index.json or its bundle is larger than 1 MiB",
                                       method_verify_index_files);
}

static int method_remove_marketplace(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *name = param_string(params, "name");
        char reason[160];
        int r;

        r = marketplaces_remove(m->marketplaces, m->state_fd, name);
        if (r == -ENOENT)
                return reply_error(call, CONSOLE_ERROR("UnknownMarketplace"),
                                   json_pack("{s:s}", "name", name));
        if (r == -EPERM)
                return reply_error(call, CONSOLE_ERROR("MarketplaceFromPolicy"),
                                   json_pack("{s:s}", "name", name));
        if (r < 0) {
                snprintf(reason, sizeof(reason), "the state directory: %s", strerror(-r));
                return reply_unavailable(call, reason);
        }
        log_struct(LOG_NOTICE, LOCKD_MESSAGE_MARKETPLACE_REMOVED,
                   LOG_FIELDS(LOG_FIELD("MARKETPLACE", name),
                              LOG_FIELD_U64("PEER_UID", peer_uid(call))),
                   "marketplace %s removed", name);
        audit_change(m, AUDIT_MARKETPLACE_REMOVE,
                     json_pack("{s:s, s:I}", "marketplace", name, "peer_uid",
                               (json_int_t)peer_uid(call)));
        return varlink_call_reply(call, NULL, false);
}

static const VarlinkParam params_list[] = {LIST_PAGE_PARAMS, {NULL}};

static const VarlinkParam params_install_plugin[] = {
        {"marketplace", VARLINK_STRING, false, 1, MARKETPLACE_NAME_MAX},
        {"manifest_fd", VARLINK_INT, true, 0, FD_INDEX_MAX},
        {"binary_fd", VARLINK_INT, true, 0, FD_INDEX_MAX},
        {"manifest_bundle_fd", VARLINK_INT, false, 0, FD_INDEX_MAX},
        {"binary_bundle_fd", VARLINK_INT, false, 0, FD_INDEX_MAX},
        {"index_fd", VARLINK_INT, false, 0, FD_INDEX_MAX},
        {"index_bundle_fd", VARLINK_INT, false, 0, FD_INDEX_MAX},
        {"accept_name", VARLINK_STRING, false, 1, 128},
        {NULL},
};

static const VarlinkParam params_remove_plugin[] = {
        {"name", VARLINK_STRING, true, 1, 128},
        {"version", VARLINK_STRING, false, 1, 32},
        {NULL},
};

static const VarlinkParam params_add_marketplace[] = {
        {"name", VARLINK_STRING, true, 1, 128},
        {"issuer", VARLINK_STRING, true, 1, MARKETPLACE_ISSUER_MAX},
        {"identity", VARLINK_STRING, true, 1, MARKETPLACE_IDENTITY_MAX},
        {"trusted_root_fd", VARLINK_INT, true, 0, FD_INDEX_MAX},
        {"force", VARLINK_BOOL, false, 0, 0},
        {"url", VARLINK_STRING, false, 1, MARKETPLACE_URL_MAX},
        {NULL},
};

static const VarlinkParam params_verify_index[] = {
        {"marketplace", VARLINK_STRING, true, 1, MARKETPLACE_NAME_MAX},
        {"index_fd", VARLINK_INT, true, 0, FD_INDEX_MAX},
        {"index_bundle_fd", VARLINK_INT, true, 0, FD_INDEX_MAX},
        {NULL},
};

static const VarlinkParam params_remove_marketplace[] = {
        {"name", VARLINK_STRING, true, 1, 128},
        {NULL},
};

const VarlinkMethod console_plugin_methods[] = {
        {"ListPlugins", method_list_plugins, params_list, 0},
        {"InstallPlugin", method_install_plugin, params_install_plugin, VARLINK_METHOD_ACCEPTS_FDS},
        {"RemovePlugin", method_remove_plugin, params_remove_plugin, 0},
        {"AddMarketplace", method_add_marketplace, params_add_marketplace,
         VARLINK_METHOD_ACCEPTS_FDS},
        {"ListMarketplaces", method_list_marketplaces, params_list, 0},
        {"RemoveMarketplace", method_remove_marketplace, params_remove_marketplace, 0},
        {"VerifyIndex", method_verify_index, params_verify_index, VARLINK_METHOD_ACCEPTS_FDS},
        {NULL},
};
