import attest_candidate  # noqa: F401
import no_such_module_for_attest_tests  # noqa: F401
