"""README.md, checked without servers: its contents list and links
resolve, the operator's path comes before any developer material, and
every fenced block says how a test runs or checks it (tests/readme_blocks.py)
and passes the checks that need no server: configuration fragments through
oslo-config-validator with the README's own namespaces, nova.conf against
keystoneauth's options, the policy file against the registered rules,
excerpts against their files. The blocks marked ``run`` are run by
tests/integration/test_readme_operator_path.py.
"""
import configparser
import pathlib
import re
import shlex
import subprocess
import sys

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy
import yaml

from placement import conf as placement_conf
from placement import policies

import readme_blocks

REPO = readme_blocks.REPO
VALIDATOR = pathlib.Path(sys.executable).parent / 'oslo-config-validator'
# The operator's path, in the order the README gives it.
OPERATOR_PATH = [
    'Quick start', 'Installing and running it', 'Install',
    'Create the database and its user', 'Configure placement.conf',
    'Policy: policy.yaml and oslo_policy', 'Create the schema',
    'Register with Keystone', 'Run it', 'gunicorn and systemd',
    'Apache httpd and mod_wsgi', 'Verify', 'Point Nova at it',
    'Take over an upstream database']
_LINK = re.compile(r'\]\(([^)\s]+)\)')
_REPO_PATH = re.compile(r'(?<![\w/.$-])((?:etc|tools|tests|placement|alembic)'
                        r'/[\w./*-]*[\w*])')


def _contents(text):
    start = text.index('## Contents\n')
    return text[start:text.index('\n## ', start + 1)]


def test_contents_lists_every_section_and_resolves():
    text = readme_blocks.text()
    anchors = {readme_blocks.slug(title)
               for _level, title in readme_blocks.headings()}
    listed = _LINK.findall(_contents(text))
    assert listed and all(link.startswith('#') for link in listed)
    assert [link for link in listed if link[1:] not in anchors] == []
    sections = ['#' + readme_blocks.slug(title)
                for level, title in readme_blocks.headings()
                if level in (2, 3) and title != 'Contents']
    assert [section for section in sections if section not in listed] == []


def test_every_link_resolves():
    text = readme_blocks.text()
    anchors = {readme_blocks.slug(title)
               for _level, title in readme_blocks.headings()}
    broken = []
    for link in _LINK.findall(text):
        if link.startswith(('http://', 'https://')):
            continue
        if link.startswith('#'):
            if link[1:] not in anchors:
                broken.append(link)
        elif not (REPO / link.split('#')[0]).exists():
            broken.append(link)
    assert broken == []


def test_no_section_is_placed_by_below_or_above():
    """Cross-references are links, not "see X below"."""
    text = readme_blocks.text()
    assert re.findall(r'"[A-Z][^"\n]{3,60}" (?:below|above)', text) == []


def test_operator_path_comes_before_developer_material():
    titles = [title for _level, title in readme_blocks.headings()]
    positions = [titles.index(title) for title in OPERATOR_PATH]
    assert positions == sorted(positions)
    top = [title for level, title in readme_blocks.headings() if level == 2]
    assert top[-1] == 'Development'
    assert titles.index('Development') > titles.index('Reference')


def test_every_block_says_how_it_is_tested():
    unmarked = [str(block) for block in readme_blocks.blocks()
                if block.kind not in readme_blocks.KINDS]
    assert unmarked == []
    steps = [block.argument for block in readme_blocks.marked('run')]
    assert set(steps) <= set(readme_blocks.RUN_STEPS)
    single = [name for name in readme_blocks.RUN_STEPS if name != 'dev-curl']
    assert sorted(name for name in steps if name != 'dev-curl') == sorted(
        single)


def test_files_the_blocks_name_exist():
    missing = []
    for block in readme_blocks.blocks():
        named = _REPO_PATH.findall(block.text)
        if block.kind in ('by', 'excerpt'):
            named.append(block.argument)
        for path in named:
            if not list(REPO.glob(path)):
                missing.append('%s: %s' % (block, path))
    assert missing == []


def _validate(path):
    """oslo-config-validator as the README runs it, on ``path``."""
    command = shlex.split(readme_blocks.step('validate').text.replace(
        '\\\n', ' '))
    command[0] = str(VALIDATOR)
    command[command.index('--input-file') + 1] = str(path)
    return subprocess.run(command, capture_output=True, text=True,
                          timeout=120)


def test_configuration_blocks_pass_the_validator(tmp_path):
    fragments = readme_blocks.marked('config') + [
        readme_blocks.step('placement.conf')]
    for block in fragments:
        path = tmp_path / 'placement.conf'
        path.write_text(block.text)
        result = _validate(path)
        assert result.returncode == 0, '%s:\n%s' % (block, result.stderr)


def test_validator_passes_the_sample_and_names_a_typo(tmp_path):
    sample = _validate(REPO / 'etc' / 'placement' / 'placement.conf.sample')
    assert sample.returncode == 0, sample.stderr
    typo = tmp_path / 'placement.conf'
    typo.write_text('[placement]\nmax_returned_allocation_candidate = 5\n'
                    '[metrics]\nenable = true\n')
    result = _validate(typo)
    assert result.returncode == 1
    for name in ('placement/max_returned_allocation_candidate',
                 'metrics/enable'):
        assert '%s is not part of the sample config' % name in result.stderr
    # The README quotes the first one as it comes.
    quoted = ('ERROR:oslo_config.validator:placement/'
              'max_returned_allocation_candidate is not part of the sample '
              'config')
    assert quoted in result.stderr
    assert quoted in readme_blocks.text()


def test_nova_conf_names_keystoneauth_options():
    (block,) = readme_blocks.marked('nova.conf')
    parser = configparser.ConfigParser()
    parser.read_string(block.text)
    known = {option.dest for option in
             ks_loading.get_auth_plugin_conf_options('password')
             + ks_loading.get_adapter_conf_options()
             + ks_loading.get_session_conf_options()}
    known.add('auth_type')
    named = {name.replace('-', '_') for name in parser['placement']}
    assert named - known == set()


def test_policy_file_changes_registered_rules():
    rules = oslo_policy.Rules.load(readme_blocks.step('policy.yaml').text)
    registered = {rule.name for rule in policies.list_rules()}
    assert rules and set(rules) <= registered
    # A rule oslo.policy cannot parse becomes "!", which denies everyone.
    assert [str(check) for check in rules.values() if str(check) == '!'
            ] == []


def test_excerpts_are_in_their_files():
    for block in readme_blocks.marked('excerpt'):
        source = (REPO / block.argument).read_text()
        lines = [line.strip() for line in block.text.splitlines()
                 if line.strip()]
        assert [line for line in lines if line not in source] == [], (
            str(block))


def test_yaml_blocks_parse():
    for block in readme_blocks.marked('yaml'):
        assert yaml.safe_load(block.text), str(block)


def test_run_dev_port_is_documented():
    """tools/run-dev.sh --port is in the README, in its quick start."""
    assert '--port' in readme_blocks.step('quick-start').text


def test_policy_section_names_oslo_policys_options():
    """enforce_new_defaults is an option of the installed oslo.policy;
    enforce_scope, which the README says oslo.policy 6 removed, is not."""
    conf = cfg.ConfigOpts()
    policy_opts.set_defaults(conf)
    names = {opt.dest for opt in conf._groups['oslo_policy']._opts.values()
             for opt in [opt['opt']]}
    assert 'enforce_new_defaults' in names
    assert 'enforce_scope' not in names
    text = readme_blocks.text()
    section = text[text.index('### Policy: '):
                   text.index('### Create the schema')]
    assert '**`enforce_scope`**: oslo.policy 6' in section


# Upstream 16.0.0's own options (placement/conf/ there), by group.
UPSTREAM_OPTIONS = {
    'DEFAULT': {'tempdir', 'pybasedir', 'state_path'},
    'api': {'auth_strategy'},
    'placement': {'randomize_allocation_candidates',
                  'incomplete_consumer_project_id',
                  'incomplete_consumer_user_id',
                  'allocation_conflict_retry_count',
                  'max_allocation_candidates',
                  'allocation_candidates_generation_strategy'},
    'placement_database': {'connection', 'connection_parameters',
                           'sqlite_synchronous', 'slave_connection',
                           'mysql_sql_mode', 'connection_recycle_time',
                           'max_pool_size', 'max_retries', 'retry_interval',
                           'max_overflow', 'connection_debug',
                           'connection_trace', 'pool_timeout',
                           'sync_on_startup'},
    'workarounds': {'optimize_for_wide_provider_trees'},
}


def _options_table():
    """{group: names} of the rows of the README's table of options."""
    text = readme_blocks.text()
    start = text.index('### Configuration options this service adds')
    table = text[start:text.index('\n### ', start + 1)]
    named = {}
    for row in re.findall(r'^\| (`\[[^|]+) \|', table, re.M):
        group = re.match(r'`\[(\w+)\]', row).group(1)
        names = re.findall(r'`(?:\[\w+\] )?(\w+)`', row)
        named.setdefault(group, set()).update(names)
    return named


def test_options_table_names_every_option_not_upstreams():
    """Every option this service registers that upstream does not have is
    a row of the README's one table of options."""
    table = _options_table()
    missing = []
    for group, options in placement_conf.list_opts():
        name = getattr(group, 'name', group)
        for option in options:
            if option.name in UPSTREAM_OPTIONS.get(name, ()):
                continue
            if option.name not in table.get(name, ()):
                missing.append('[%s] %s' % (name, option.name))
    assert missing == []
