/* PLACEHOLDER: replaced by the module that implements this verb. */
#include "commands.h"
int attest_cmd_campaign(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return attest_cli_usage_error("campaign", "not implemented yet");
}
