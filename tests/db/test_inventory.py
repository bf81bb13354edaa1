"""placement.db.inventory against every backend."""
import pytest
import sqlalchemy as sa

from placement import exception
from placement.db import inventory as inv_db
from placement.db import resource_provider as rp_db
from placement.db import tables

import sql_rows

VCPU = inv_db.with_defaults({'total': 8})
DISK = inv_db.with_defaults({'total': 100, 'reserved': 10,
                             'allocation_ratio': 1.5})


@pytest.fixture
def engine(backend):
    return backend.engine


@pytest.fixture
def provider(engine):
    with engine.begin() as conn:
        return sql_rows.provider(conn)


def _write(engine, fn, *args, **kwargs):
    with engine.begin() as conn:
        return fn(conn, *args, **kwargs)


def _state(engine, provider):
    """(generation, {class: total}) as stored."""
    with engine.connect() as conn:
        generation = rp_db.get_by_uuid(conn, provider['uuid'])['generation']
        stored = inv_db.get_all(conn, provider['id'])
    return generation, {name: r['total'] for name, r in stored.items()}


def _fresh(engine, provider):
    with engine.connect() as conn:
        return rp_db.get_by_uuid(conn, provider['uuid'])


def test_with_defaults_fills_only_missing_fields():
    assert inv_db.with_defaults({'total': 4, 'reserved': 1}) == {
        'total': 4, 'reserved': 1, 'min_unit': 1, 'max_unit': 2147483647,
        'step_size': 1, 'allocation_ratio': 1.0}


@pytest.mark.parametrize('record, may_equal, ok', [
    ({'total': 4, 'reserved': 3}, False, True),
    ({'total': 4, 'reserved': 4}, False, False),
    ({'total': 4, 'reserved': 4}, True, True),
    ({'total': 4, 'reserved': 5}, True, False),
    # The ratio scales capacity: zero or negative ratios are refused too.
    ({'total': 4, 'reserved': 0, 'allocation_ratio': 0.0}, False, False),
    ({'total': 4, 'reserved': 0, 'allocation_ratio': 0.0}, True, True),
    ({'total': 4, 'reserved': 0, 'allocation_ratio': -1.0}, True, False),
])
def test_check_record_capacity(record, may_equal, ok):
    record = inv_db.with_defaults(record)
    if ok:
        inv_db.check_record('rp', 'VCPU', record, may_equal)
        return
    with pytest.raises(exception.Invalid) as raised:
        inv_db.check_record('rp', 'VCPU', record, may_equal)
    expected = ('greater than total' if may_equal
                else 'greater than or equal to total')
    assert str(raised.value) == (
        "Invalid inventory for 'VCPU' on resource provider 'rp'. The "
        "reserved value is %s." % expected)


@pytest.mark.parametrize('units, problem', [
    ({'min_unit': 5, 'max_unit': 3},
     'min_unit (5) is greater than max_unit (3)'),
    ({'min_unit': 5, 'max_unit': 7, 'step_size': 4},
     'no multiple of step_size (4) lies between min_unit (5) and max_unit '
     '(7)'),
    ({'min_unit': 1, 'max_unit': 1, 'step_size': 2},
     'no multiple of step_size (2) lies between min_unit (1) and max_unit '
     '(1)'),
])
def test_check_record_refuses_units_nothing_can_meet(units, problem):
    record = inv_db.with_defaults(dict(units, total=100))
    with pytest.raises(exception.Invalid) as raised:
        inv_db.check_record('rp', 'VCPU', record, True)
    assert str(raised.value) == (
        "Invalid inventory for 'VCPU' on resource provider 'rp': %s, so "
        "nothing could ever be allocated from it." % problem)


@pytest.mark.parametrize('units', [
    {'min_unit': 3, 'max_unit': 3},
    {'min_unit': 5, 'max_unit': 8, 'step_size': 4},
    {'min_unit': 4, 'max_unit': 4, 'step_size': 2},
    {'max_unit': 1, 'step_size': 1},
])
def test_check_record_accepts_units_some_amount_meets(units):
    inv_db.check_record('rp', 'VCPU', inv_db.with_defaults(
        dict(units, total=100)), True)


def test_add_update_delete_bump_generation(engine, provider):
    assert _write(engine, inv_db.add, provider, 'VCPU', VCPU) == 1
    assert _state(engine, provider) == (1, {'VCPU': 8})

    changed = dict(VCPU, total=16)
    assert _write(engine, inv_db.update, provider, 'VCPU', changed, 1) == 2
    assert _state(engine, provider) == (2, {'VCPU': 16})

    assert _write(engine, inv_db.delete, _fresh(engine, provider),
                  'VCPU') == 3
    assert _state(engine, provider) == (3, {})


def test_get_all_returns_every_field_and_timestamps(engine, provider):
    _write(engine, inv_db.add, provider, 'DISK_GB', DISK)
    with engine.connect() as conn:
        record = inv_db.get_all(conn, provider['id'])['DISK_GB']
    assert {f: record[f] for f in inv_db.FIELDS} == DISK
    assert record['created_at'] is not None


def test_add_duplicate(engine, provider):
    _write(engine, inv_db.add, provider, 'VCPU', VCPU)
    with pytest.raises(exception.Duplicate):
        _write(engine, inv_db.add, _fresh(engine, provider), 'VCPU', VCPU)
    assert _state(engine, provider) == (1, {'VCPU': 8})


def test_add_with_stale_generation_writes_nothing(engine, provider):
    _write(engine, inv_db.add, provider, 'VCPU', VCPU)
    # ``provider`` still says generation 0.
    with pytest.raises(exception.ConcurrentUpdate):
        _write(engine, inv_db.add, provider, 'DISK_GB', DISK)
    assert _state(engine, provider) == (1, {'VCPU': 8})


def test_unknown_class(engine, provider):
    with pytest.raises(exception.NotFound) as raised:
        _write(engine, inv_db.add, provider, 'HOUSE', VCPU)
    assert str(raised.value) == 'No such resource class HOUSE.'
    assert _state(engine, provider) == (0, {})


def test_update_and_delete_missing_inventory(engine, provider):
    with pytest.raises(inv_db.NoSuchInventory) as raised:
        _write(engine, inv_db.update, provider, 'VCPU', VCPU, 0)
    assert str(raised.value) == 'No inventory of class VCPU found.'
    with pytest.raises(inv_db.NoSuchInventory) as raised:
        _write(engine, inv_db.delete, provider, 'VCPU')
    assert str(raised.value) == 'No inventory of class VCPU found for delete'
    assert _state(engine, provider) == (0, {})


def test_update_with_stale_generation_writes_nothing(engine, provider):
    _write(engine, inv_db.add, provider, 'VCPU', VCPU)
    with pytest.raises(exception.ConcurrentUpdate):
        _write(engine, inv_db.update, provider, 'VCPU',
               dict(VCPU, total=1), 0)
    assert _state(engine, provider) == (1, {'VCPU': 8})


def test_replace_all_adds_updates_and_removes(engine, provider):
    _write(engine, inv_db.replace_all, provider,
           {'VCPU': VCPU, 'MEMORY_MB': dict(VCPU, total=1024)}, 0)
    generation = _write(engine, inv_db.replace_all, provider,
                        {'VCPU': dict(VCPU, total=4), 'DISK_GB': DISK}, 1)
    assert generation == 2
    assert _state(engine, provider) == (2, {'VCPU': 4, 'DISK_GB': 100})


def test_replace_all_with_nothing_still_bumps_generation(engine, provider):
    assert _write(engine, inv_db.replace_all, provider, {}, 0) == 1
    assert _state(engine, provider) == (1, {})


def test_replace_all_stale_generation_writes_nothing(engine, provider):
    _write(engine, inv_db.replace_all, provider, {'VCPU': VCPU}, 0)
    with pytest.raises(exception.ConcurrentUpdate):
        _write(engine, inv_db.replace_all, provider, {'DISK_GB': DISK}, 0)
    assert _state(engine, provider) == (1, {'VCPU': 8})


def test_replace_all_reports_first_unknown_class_in_order(engine, provider):
    with pytest.raises(exception.NotFound) as raised:
        _write(engine, inv_db.replace_all, provider,
               {'VCPU': VCPU, 'ZZZ': VCPU, 'AAA': VCPU}, 0)
    assert str(raised.value) == 'No such resource class ZZZ.'
    assert _state(engine, provider) == (0, {})


def test_removing_allocated_classes_is_refused(engine, provider):
    _write(engine, inv_db.replace_all, provider,
           {'VCPU': VCPU, 'DISK_GB': DISK, 'MEMORY_MB': VCPU}, 0)
    _write(engine, sql_rows.allocate, provider['id'],
           {'DISK_GB': 5, 'VCPU': 1})
    message = ("Inventory for 'VCPU, DISK_GB' on resource provider '%s' "
               "in use." % provider['uuid'])
    with pytest.raises(exception.InUse) as raised:
        _write(engine, inv_db.replace_all, provider, {}, 1)
    assert str(raised.value) == message
    with pytest.raises(exception.InUse):
        _write(engine, inv_db.delete, _fresh(engine, provider), 'DISK_GB')
    assert _state(engine, provider) == (
        1, {'VCPU': 8, 'DISK_GB': 100, 'MEMORY_MB': 8})
    # Classes without allocations can go.
    _write(engine, inv_db.replace_all, provider,
           {'VCPU': VCPU, 'DISK_GB': DISK}, 1)
    assert _state(engine, provider)[1] == {'VCPU': 8, 'DISK_GB': 100}


def test_shrinking_below_usage_is_allowed(engine, provider, caplog):
    _write(engine, inv_db.add, provider, 'VCPU', VCPU)
    _write(engine, sql_rows.allocate, provider['id'], {'VCPU': 6})
    _write(engine, inv_db.update, provider, 'VCPU', dict(VCPU, total=2), 1)
    assert _state(engine, provider) == (2, {'VCPU': 2})
    assert 'is now over-capacity for VCPU' in caplog.text


def test_deferred_in_use_check(engine, provider):
    """The reshaper's way: replace, rewrite allocations, then check."""
    _write(engine, inv_db.replace_all, provider,
           {'VCPU': VCPU, 'DISK_GB': DISK}, 0)
    consumer = _write(engine, sql_rows.allocate, provider['id'],
                      {'DISK_GB': 5})

    def reshape(conn, keep_allocation):
        inv_db.replace_all(conn, provider, {'VCPU': VCPU}, 1,
                           check_in_use=False)
        if not keep_allocation:
            conn.execute(tables.allocations.delete().where(
                tables.allocations.c.consumer_id == consumer))
        inv_db.ensure_allocations_covered(conn, provider)

    with pytest.raises(exception.InUse) as raised:
        _write(engine, reshape, keep_allocation=True)
    assert str(raised.value) == (
        "Inventory for 'DISK_GB' on resource provider '%s' in use."
        % provider['uuid'])
    assert _state(engine, provider) == (1, {'VCPU': 8, 'DISK_GB': 100})

    _write(engine, reshape, keep_allocation=False)
    assert _state(engine, provider) == (2, {'VCPU': 8})
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(
            tables.allocations)).scalar() == 0
