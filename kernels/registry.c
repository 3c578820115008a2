/* The built-in candidate registry: CPU kernels, then mutants (ATTEST_WITH_MUTANTS), then CUDA
 * kernels (ATTEST_WITH_CUDA). The list is assembled once, on first use, in static storage. */
#include "attest/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "attest/external.h"
#include "attest/runner.h"
#include "cpu/cpu_kernels.h"
#ifdef ATTEST_WITH_CUDA
#include "attest/cuda_candidates.h"
#endif

#define REGISTRY_CAPACITY 128

static const attest_candidate *registry[REGISTRY_CAPACITY];
static size_t registry_count;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void append(const attest_candidate *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (registry_count == REGISTRY_CAPACITY) {
            /* Only reachable if someone adds >100 built-ins; say so rather than drop silently. */
            fprintf(stderr, "attest: registry full, candidate '%s' not registered\n",
                    list[i]->name);
            continue;
        }
        registry[registry_count++] = list[i];
    }
}

static void build_registry(void)
{
    static const attest_candidate *const cpu[] = {&cpu_indexer_candidate,
                                                  &cpu_mla_decode_candidate};
    append(cpu, sizeof cpu / sizeof cpu[0]);
    size_t no = 0;
    const attest_candidate *const *orders = cpu_order_candidates(&no);
    append(orders, no);
#ifdef ATTEST_WITH_MUTANTS
    size_t nm = 0;
    const attest_candidate *const *m = cpu_mutant_candidates(&nm);
    append(m, nm);
#endif
#ifdef ATTEST_WITH_CUDA
    size_t nc = 0;
    const attest_candidate *const *c = attest_cuda_candidates(&nc);
    if (c) append(c, nc);
    /* Registration only stores a pointer: CUDA itself starts in the runner's worker. */
    if (attest_register_device_ops(attest_cuda_device_ops()) != 0)
        fprintf(stderr, "attest: CUDA device ops refused by the harness\n");
#endif
}

size_t attest_builtin_candidates(const attest_candidate *const **list)
{
    pthread_once(&registry_once, build_registry);
    if (list) *list = registry;
    return registry_count;
}

const attest_candidate *attest_builtin_find(const char *name)
{
    const attest_candidate *const *list;
    size_t n = attest_builtin_candidates(&list);
    if (!name) return NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i]->name, name) == 0) return list[i];
    return NULL;
}

attest_status attest_candidate_resolve(const char *spec, const attest_candidate **out)
{
    ATTEST_RETURN_IF(!spec || !*spec || !out, ATTEST_ERR_INVALID_ARGUMENT,
                     "candidate: empty --candidate argument");
    *out = NULL;
    if (attest_external_is_spec(spec)) return attest_external_load(spec, out);
    const attest_candidate *c = attest_builtin_find(spec);
    if (c) {
        *out = c;
        return ATTEST_OK;
    }
    /* Built-in names hold no ':', so a ':' can only mean "library:NAME". */
    if (strchr(spec, ':')) return attest_plugin_load(spec, out);

    const attest_candidate *const *list;
    size_t n = attest_builtin_candidates(&list), used = 0;
    char names[384] = "";
    for (size_t i = 0; i < n && used + 1 < sizeof names; i++) {
        int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", list[i]->name);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used >= sizeof names) memcpy(names + sizeof names - 4, "...", 4);
    return attest_fail(ATTEST_ERR_NOT_FOUND,
                       "candidate '%s' not found; built-in: %s; or a plugin as path/lib.so:NAME, or py:PATH.py:NAME, or exec:COMMAND",
                       spec, names);
}
