/* A results file's provenance as every verb that writes one fills it (campaign.h). */
#include <stdio.h>
#include <string.h>

#include "attest/campaign.h"

void attest_campaign_provenance(attest_results_provenance *prov, const attest_policy *policy,
                                const char *command_line)
{
    attest_results_provenance_init(prov);
    snprintf(prov->policy_name, sizeof prov->policy_name, "%s", attest_policy_name(policy));
    snprintf(prov->policy_hash, sizeof prov->policy_hash, "%s", attest_policy_hash(policy));
    snprintf(prov->policy_origin, sizeof prov->policy_origin, "%s", attest_policy_origin(policy));
    prov->policy_text = attest_policy_text(policy);
    snprintf(prov->command_line, sizeof prov->command_line, "%s", command_line ? command_line : "");
}

void attest_campaign_provenance_candidate(attest_results_provenance *prov,
                                          const attest_candidate *c, size_t *len)
{
    const char *kernel = attest_kernel_name(c->kernel);
    if (*len == 0)
        snprintf(prov->kernel, sizeof prov->kernel, "%s", kernel ? kernel : "");
    else if (strcmp(prov->kernel, kernel ? kernel : "") != 0)
        prov->kernel[0] = '\0';
    int n = snprintf(prov->candidate + *len, sizeof prov->candidate - *len, "%s%s",
                     *len ? "," : "", c->name);
    if (n > 0 && (size_t)n < sizeof prov->candidate - *len) *len += (size_t)n;
}
