"""The API's handler modules, one blueprint each, in the order of
upstream's route table (clients see it in Allow headers)."""
from placement.api.resources import aggregates
from placement.api.resources import allocation_candidates
from placement.api.resources import allocations
from placement.api.resources import capacity
from placement.api.resources import explain
from placement.api.resources import inventories
from placement.api.resources import reshaper
from placement.api.resources import resource_classes
from placement.api.resources import resource_provider_traits
from placement.api.resources import resource_providers
from placement.api.resources import root
from placement.api.resources import traits
from placement.api.resources import usages

BLUEPRINTS = (
    root.blueprint,
    resource_classes.blueprint,
    traits.blueprint,
    resource_providers.blueprint,
    aggregates.blueprint,
    resource_provider_traits.blueprint,
    inventories.blueprint,
    usages.blueprint,
    allocation_candidates.blueprint,
    allocations.blueprint,
    reshaper.blueprint,
    explain.blueprint,
    capacity.blueprint,
)
