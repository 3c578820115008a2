/* The device-ops hook (attest/device.h): a registered table, nothing more. */
#include "attest/device.h"

#include <stddef.h>

static const attest_device_ops *registered;

int attest_register_device_ops(const attest_device_ops *ops)
{
    if (ops == NULL) {
        registered = NULL;
        return 0;
    }
    /* describe is the only optional op; every other one must be present. */
    if (ops->struct_size < offsetof(attest_device_ops, last_error) + sizeof ops->last_error ||
        !ops->open || !ops->alloc || !ops->free || !ops->copy_h2d || !ops->copy_d2h ||
        !ops->synchronize || !ops->last_error)
        return -1;
    registered = ops;
    return 0;
}

const attest_device_ops *attest_device_ops_get(void) { return registered; }
