/*
 * sweep_check.c -- the checks of an expanded sweep, before any point runs
 * (docs/sweeps.md, "Points and run ids"): every workload key a point sets is
 * a key of its workload; no workload key is set in two spellings (a point's
 * own two, or a fixed option's and a point's); no two points write one file
 * whole, nor a file the sweep reads (sweep_files.c); and no point runs a
 * workload that says "planner": "all".
 *
 * Each would otherwise show only when the points run: as a failed row per
 * point, or worse, as rows that silently ran something else than the file
 * says.
 */
#define _GNU_SOURCE /* strndup */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "np_json.h"
#include "workload.h"
#include "sweep_internal.h"

/* ---- workload keys ------------------------------------------------------ */

/* Every workload key a point sets (--set KEY=VALUE: "vary", "points" or
 * "options") is one its workload has: a misspelt key would otherwise fail
 * every point only when it runs, after --dry-run listed them as pending.
 * Checked once per workload and key, by loading the workload with that one
 * override; other errors (a value that breaks a rule between keys) stay the
 * points' own, a failed row each. */
static int check_set_keys(const sweep *s, np_error *err)
{
    char **seen = NULL;
    int num_seen = 0, rc = 0;
    for (int i = 0; !rc && i < s->num_points; i++) {
        const sweep_point *p = &s->points[i];
        for (int a = 0; !rc && a + 1 < p->num_args; a++) {
            if (strcmp(p->args[a], "--set") != 0)
                continue;
            const char *set = p->args[++a];
            size_t klen = strcspn(set, "=");
            char pair[1200];
            snprintf(pair, sizeof pair, "%s\n%.*s", p->workload, (int)klen, set);
            bool done = false;
            for (int k = 0; k < num_seen && !done; k++)
                done = strcmp(seen[k], pair) == 0;
            if (done)
                continue;
            char **grown = realloc(seen, (size_t)(num_seen + 1) * sizeof *seen);
            if (!grown || !(grown[num_seen] = strdup(pair))) {
                seen = grown ? grown : seen;
                rc = np_error_set(err, NP_EXIT_INTERNAL, s->path, "", 0, "out of memory");
                break;
            }
            seen = grown;
            num_seen++;
            wl_workload w;
            np_error e;
            const char *one[1] = {set};
            if (wl_load(p->workload, one, 1, &w, &e) == 0) {
                wl_free(&w);
                continue;
            }
            if (strcmp(e.source, "<command line>") == 0 &&
                (strncmp(e.text, "unknown key", 11) == 0 ||
                 strncmp(e.text, "ambiguous key", 13) == 0))
                rc = np_error_set(err, NP_EXIT_INPUT, s->path, e.key, 0, "%s (in %s): %s",
                                  "not a key of the workload", p->workload, e.text);
        }
    }
    for (int k = 0; k < num_seen; k++)
        free(seen[k]);
    free(seen);
    return rc;
}

/* ---- one key, two spellings ---------------------------------------------- */

/* The workload key a point's argument sets: a --set's key, or the key an
 * option stands for (--schedule: schedule, --planner: planner); NULL when
 * none.  Its length in *n. */
static const char *set_key(char *const *args, int a, int num_args, size_t *n)
{
    if (strcmp(args[a], "--set") == 0 && a + 1 < num_args) {
        *n = strcspn(args[a + 1], "=");
        return args[a + 1];
    }
    if ((strcmp(args[a], "--schedule") == 0 || strcmp(args[a], "--planner") == 0) &&
        a + 1 < num_args) {
        *n = strlen(args[a] + 2);
        return args[a] + 2;
    }
    return NULL;
}

/* The same key spelt twice: equal, or one bare and the other's last dotted
 * part (bare keys are unique, workload_override.c). */
static bool same_key(const char *a, size_t na, const char *b, size_t nb)
{
    if (na == nb && strncmp(a, b, na) == 0)
        return true;
    const char *da = memchr(a, '.', na), *db = memchr(b, '.', nb);
    if ((da != NULL) == (db != NULL))
        return false;
    const char *dotted = da ? a : b, *bare = da ? b : a;
    size_t nd = da ? na : nb, nbare = da ? nb : na;
    const char *last = dotted + nd;
    while (last > dotted && last[-1] != '.')
        last--;
    return (size_t)(dotted + nd - last) == nbare && strncmp(last, bare, nbare) == 0;
}

/* Whether args[a] and args[b], which set one key, spell it alike: the same
 * option (--schedule twice), or --set with the same key text. */
static bool same_spelling(char *const *args, int a, const char *ka, size_t na, int b,
                          const char *kb, size_t nb)
{
    if (strcmp(args[a], args[b]) != 0)
        return false;
    return strcmp(args[a], "--set") != 0 || (na == nb && strncmp(ka, kb, na) == 0);
}

/* "--schedule 1f1b" or "--set schedule=gpipe": how args[a] sets its key. */
static void spelling(char *const *args, int a, char *buf, size_t size)
{
    snprintf(buf, size, "%s %.200s", args[a], args[a + 1]);
}

/* The key's name for a message: the dotted one of two spellings, else ka. */
static int key_name(const char *ka, size_t na, const char *kb, size_t nb, const char **name)
{
    bool b_dotted = memchr(kb, '.', nb) && !memchr(ka, '.', na);
    *name = b_dotted ? kb : ka;
    return (int)(b_dotted ? nb : na);
}

/* A workload key set in two spellings would run with whichever simrun takes
 * (it refuses some pairs, and reads others in an order the file does not
 * show): refused when a point's own arguments (vary, points) set one key
 * twice (training.global_batch_size and global_batch_size, or --schedule and
 * schedule), when the fixed options set it twice, or when a point sets a key
 * the fixed options set in another spelling.  A point's own value overriding
 * a fixed one of the same spelling is by design: it comes later on simrun's
 * command line (docs/sweeps.md). */
static int check_point_keys(const sweep *s, np_error *err)
{
    for (int i = 0; i < s->num_points; i++) {
        char *const *args = s->points[i].args;
        int n = s->points[i].num_args, own = s->points[i].first_own_arg;
        for (int a = 0; a < n; a++) {
            size_t na, nb;
            const char *ka = set_key(args, a, n, &na);
            for (int b = a + 1; ka && b < n; b++) {
                const char *kb = set_key(args, b, n, &nb);
                if (!kb || !same_key(ka, na, kb, nb) ||
                    (a < own && same_spelling(args, a, ka, na, b, kb, nb)))
                    continue;
                if (i > 0 && b < own)
                    continue; /* the fixed options: said for point 0 */
                char sa[256], sb[256];
                spelling(args, a, sa, sizeof sa);
                spelling(args, b, sb, sizeof sb);
                const char *name;
                int len = key_name(ka, na, kb, nb, &name);
                if (b < own)
                    return np_error_set(err, NP_EXIT_INPUT, s->path, "options", 0,
                                        "sets the workload key %.*s twice, in two spellings: %s "
                                        "and %s; give it once",
                                        len, name, sa, sb);
                if (a < own)
                    return np_error_set(
                        err, NP_EXIT_INPUT, s->path, "", 0,
                        "point %d sets the workload key %.*s as %s, which \"options\" sets as %s: "
                        "two spellings of one key do not override each other; use one spelling "
                        "(a point's own value wins over a fixed one of the same spelling)",
                        i, len, name, sb, sa);
                /* an option by its own name: --schedule, not schedule */
                bool oa = ka == args[a] + 2, ob = kb == args[b] + 2;
                return np_error_set(err, NP_EXIT_INPUT, s->path, "", 0,
                                    "point %d sets one workload key twice, as %s%.*s and %s%.*s: "
                                    "give it once",
                                    i, oa ? "--" : "", (int)na, ka, ob ? "--" : "", (int)nb, kb);
            }
        }
    }
    return 0;
}

/* ---- "planner": "all" in a workload ------------------------------------- */

/* A workload whose "planner" is "all" writes one row per planner, and a
 * point is one row (simrun refuses --run-id with it): refused unless every
 * point of that workload names its planner (--planner, planner). */
static int check_workload_planner(const sweep *s, np_error *err)
{
    const char *checked = NULL; /* the last workload loaded: points come workload by workload */
    bool all = false;
    for (int i = 0; i < s->num_points; i++) {
        const sweep_point *p = &s->points[i];
        bool named = false;
        for (int a = 0; a + 1 < p->num_args && !named; a++) {
            size_t n;
            const char *k = set_key(p->args, a, p->num_args, &n);
            named = k && same_key(k, n, "planner", 7);
        }
        if (named)
            continue;
        if (!checked || strcmp(checked, p->workload) != 0) {
            /* the file's own key (a workload that does not load is the
             * points' own failure, a row each, as without this check) */
            checked = p->workload;
            json_t *root = np_json_read(p->workload, "workload", WL_MAX_FILE_BYTES, 0, NULL);
            const json_t *planner = json_object_get(root, "planner");
            all = json_is_string(planner) && strcasecmp(json_string_value(planner), "all") == 0;
            json_decref(root);
        }
        if (all)
            return np_error_set(err, NP_EXIT_INPUT, s->path, "workloads", 0,
                                "%s says \"planner\": \"all\", which writes one row per planner, "
                                "and point %d is one row: vary \"--planner\" over the planners' "
                                "names (or give it in \"options\")",
                                p->workload, i);
    }
    return 0;
}

int sweep_check_points(const sweep *s, np_error *err)
{
    int rc = check_set_keys(s, err);
    if (!rc) /* files written whole by two points, or onto the sweep's inputs */
        rc = sweep_check_files(s, NULL, err);
    if (!rc)
        rc = check_point_keys(s, err);
    if (!rc)
        rc = check_workload_planner(s, err);
    return rc;
}
