/* Stop signals (campaign.h): SIGINT and SIGTERM ask a loop to stop after the current case. */
#include <signal.h>
#include <string.h>

#include "engine_internal.h"

volatile sig_atomic_t attest_engine_stop_requested;
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    attest_engine_stop_requested = 1;
    stop_signal = sig;
}

void attest_stop_signals_catch(attest_stop_guard *g)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    attest_engine_stop_requested = 0;
    stop_signal = 0;
    sigaction(SIGINT, &sa, &g->old_int);
    sigaction(SIGTERM, &sa, &g->old_term);
}

void attest_stop_signals_release(const attest_stop_guard *g)
{
    sigaction(SIGINT, &g->old_int, NULL);
    sigaction(SIGTERM, &g->old_term, NULL);
}

int attest_stop_requested(void) { return attest_engine_stop_requested != 0; }

int attest_stop_signal(void) { return stop_signal; }
