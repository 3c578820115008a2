/* PLACEHOLDER: replaced by the module that implements this verb. */
#include "commands.h"
int attest_cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return attest_cli_usage_error("run", "not implemented yet");
}
