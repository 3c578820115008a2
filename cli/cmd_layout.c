/* PLACEHOLDER: replaced by the module that implements this verb. */
#include "commands.h"
int attest_cmd_layout(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return attest_cli_usage_error("layout", "not implemented yet");
}
