"""Response bodies: orjson where it can, the standard library where not."""
import json

import pytest

from placement.api.pipeline import responses


@pytest.mark.parametrize('data', [
    {'allocation_requests': [{'allocations': {'rp': {'resources': {
        'VCPU': 1}}}}], 'ratio': 16.0, 'name': 'caf\u00e9 \U0001f600'},
    {'total': 2 ** 70},          # beyond orjson's 64-bit integers
    {'name': 'lone \ud800'},     # a surrogate orjson refuses
])
def test_encoded_body_decodes_to_the_data(data):
    encoded = responses.encode_json(data)
    assert isinstance(encoded, bytes)
    assert json.loads(encoded) == data
