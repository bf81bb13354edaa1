"""Default policy rules of placement, one module per API resource."""

from placement.policies import aggregate
from placement.policies import allocation
from placement.policies import allocation_candidate
from placement.policies import base
from placement.policies import explain
from placement.policies import inventory
from placement.policies import reshaper
from placement.policies import resource_class
from placement.policies import resource_provider
from placement.policies import trait
from placement.policies import usage

# Order decides the order of the generated sample policy file.
_MODULES = (
    base,
    resource_provider,
    resource_class,
    inventory,
    aggregate,
    usage,
    trait,
    allocation,
    allocation_candidate,
    reshaper,
    explain,
)


def list_rules():
    """All default rules (entry point ``oslo.policy.policies``)."""
    return [rule for module in _MODULES for rule in module.list_rules()]
