"""The capacity page (GET /x-capacity) in a real browser.

Debian's Chromium, headless, driven by Selenium through chromedriver
(tools/integration-deps.sh installs both), loads the page from a gunicorn
server of this service (noauth2, SQLite) holding a small cloud and a
flavours file ([capacity] flavours_file). Checked: what the page shows is
what GET /x-capacity/flavours answers (headroom and the class that runs
out first per flavour, usage per class and per aggregate, the fullest
hosts, stranded capacity); a non-admin token gets the refusal and no
data; the token given is kept in sessionStorage only; and a screenshot
of the page is not blank and has the headline numbers where the page
draws them. Behind a real Keystone (test_keystone's, from
.venv-keystone) the page asks for a token before asking anything, shows
a member's refusal, an admin's numbers, and asks again for a bogus one.
"""
import pathlib
import struct
import types
import zlib

import pytest
import requests
import test_keystone
from test_keystone import identities  # noqa: F401  (fixture)
from test_keystone import keystone  # noqa: F401  (fixture)

import api_cloud
from conftest import unavailable
import gunicorn_server

pytestmark = [pytest.mark.integration, pytest.mark.sqlite_only]

CHROMIUM = pathlib.Path('/usr/bin/chromium')
CHROMEDRIVER = pathlib.Path('/usr/bin/chromedriver')
WIDTH, HEIGHT = 1280, 1500
# Seconds for the page to show an answer.
WAIT = 30
FLAVOURS = {
    'm1.small': 'resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20',
    'm1.large': 'resources=VCPU:8,MEMORY_MB:16384,DISK_GB:80',
    'g1.gpu': 'resources=VCPU:4,MEMORY_MB:8192&required=CUSTOM_GPU',
}
HEADERS = {'X-Auth-Token': 'admin',
           'OpenStack-API-Version': 'placement latest'}


class _Api:
    """api_cloud.Cloud's client, over HTTP to ``url``."""

    def __init__(self, url, token='admin'):
        self.url = url
        self.headers = dict(HEADERS, **{'X-Auth-Token': token})

    def request(self, method, path, json=None):
        response = requests.request(method, self.url + path, json=json,
                                    headers=self.headers, timeout=30)
        return types.SimpleNamespace(
            status_code=response.status_code,
            json=response.json() if response.content else None)


def _seed(url, token='admin'):
    """Six hosts in two aggregates, some used; one with memory left but
    no VCPU (stranded), one with a GPU trait on a full host."""
    cloud = api_cloud.Cloud(_Api(url, token))
    standard = {'VCPU': {'total': 16, 'allocation_ratio': 4.0},
                'MEMORY_MB': {'total': 65536, 'reserved': 512},
                'DISK_GB': 1000}
    for index in range(1, 7):
        cloud.provider('compute-%d' % index, inventory=standard,
                       aggregates=['rack1' if index <= 3 else 'rack2'],
                       traits=['CUSTOM_GPU'] if index == 6 else ())
    cloud.allocate('vm-1', {'compute-1': {
        'VCPU': 64, 'MEMORY_MB': 8192, 'DISK_GB': 100}})
    cloud.allocate('vm-2', {'compute-2': {
        'VCPU': 20, 'MEMORY_MB': 40000, 'DISK_GB': 200}})
    cloud.allocate('vm-3', {'compute-6': {
        'VCPU': 62, 'MEMORY_MB': 60000, 'DISK_GB': 10}})
    return cloud


def _flavours_file(workdir):
    path = workdir / 'flavours'
    path.write_text(''.join('%s %s\n' % item for item in FLAVOURS.items()))
    return str(path)


@pytest.fixture(scope='module')
def service(tmp_path_factory):
    workdir = tmp_path_factory.mktemp('capacity-page')
    with gunicorn_server.placement_server(workdir, {
            'capacity': {'flavours_file': _flavours_file(workdir)}},
            workers=2) as server:
        _seed(server.url)
        yield server


@pytest.fixture(scope='module')
def behind_keystone(tmp_path_factory, keystone, identities):
    """(the service with auth_strategy keystone, {persona: token})."""
    workdir = tmp_path_factory.mktemp('capacity-page-keystone')
    with gunicorn_server.placement_server(workdir, {
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': test_keystone.authtoken_options(
                keystone.url),
            'capacity': {'flavours_file': _flavours_file(workdir)}},
            workers=1) as server:
        tokens = {persona: test_keystone.token(keystone, persona)
                  for persona in ('project-admin', 'project-member')}
        _seed(server.url, tokens['project-admin'])
        yield server, tokens


@pytest.fixture(scope='module')
def browser():
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            unavailable('%s not found: the capacity page is NOT tested in '
                        'a browser (Debian packages chromium and '
                        'chromium-driver; tools/integration-deps.sh '
                        'installs them)' % path)
    try:
        from selenium import webdriver
    except ImportError:
        unavailable('selenium is not installed (the test extra): the '
                    'capacity page is NOT tested in a browser')
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ('--headless=new', '--no-sandbox', '--disable-gpu',
                     '--disable-dev-shm-usage', '--hide-scrollbars',
                     '--window-size=%d,%d' % (WIDTH, HEIGHT)):
        options.add_argument(argument)
    driver = webdriver.Chrome(
        service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)),
        options=options)
    driver.set_window_size(WIDTH, HEIGHT)
    yield driver
    driver.quit()


def _open(browser, url, token=None):
    """The page at ``url`` in a new session of the tab (token given
    first, if any), once it has shown something."""
    browser.get(url)
    browser.execute_script('sessionStorage.clear()')
    if token is not None:
        browser.execute_script(
            'sessionStorage.setItem("placement-capacity-token", '
            'arguments[0])', token)
    browser.refresh()
    return _state(browser)


def _state(browser):
    from selenium.webdriver.support import wait

    def shown(driver):
        state = driver.find_element('tag name', 'body').get_attribute(
            'data-state')
        return state if state and state != 'loading' else None

    return wait.WebDriverWait(browser, WAIT).until(shown)


def _rows(browser, table):
    return [[cell.text for cell in row.find_elements('tag name', 'td')]
            for row in browser.find_elements(
                'css selector', '#%s tbody tr' % table)]


def _number(text):
    return int(text.replace(',', ''))


def test_page_shows_the_answer(service, browser, tmp_path):
    answer = requests.get(service.url + '/x-capacity/flavours',
                          headers=HEADERS, timeout=30)
    assert answer.status_code == 200, answer.text
    answer = answer.json()
    assert _open(browser, service.url + '/x-capacity') == 'shown'

    cards = {card.get_attribute('data-flavour'): card
             for card in browser.find_elements('css selector', '.card')}
    assert sorted(cards) == sorted(FLAVOURS)
    for flavour in answer['flavours']:
        card = cards[flavour['name']]
        assert _number(card.find_element(
            'css selector', '.fit span').text) == flavour['fit']
        text = card.text
        assert flavour['query'] in text
        if not flavour['fit']:
            assert 'No room on any host' in text
            continue
        assert 'Runs out first: %s' % flavour['limited_by'] in text
        tightest = min(flavour['aggregates'], key=lambda a: a['fit'])
        assert 'Least room: %s\u2026 (%d)' % (
            tightest['uuid'][:8], tightest['fit']) in text
    # The seeded cloud has room for some of each but the GPU flavour.
    fits = {f['name']: f['fit'] for f in answer['flavours']}
    assert fits['m1.small'] > fits['m1.large'] > 0

    usage = {row[0]: row for row in _rows(browser, 'usage')}
    assert sorted(usage) == sorted(u['resource_class']
                                   for u in answer['usage'])
    for row in answer['usage']:
        shown = usage[row['resource_class']]
        assert _number(shown[2]) == row['used']
        assert _number(shown[3]) == int(row['capacity'])

    # A row per aggregate, a cell per class.
    shown = sorted(
        (row.find_element('tag name', 'td').text, cell.get_attribute(
            'data-class'), int(cell.get_attribute('data-used')),
         float(cell.get_attribute('data-capacity')))
        for row in browser.find_elements('css selector',
                                         '#aggregates tbody tr')
        for cell in row.find_elements('css selector', 'td[data-class]'))
    expected = sorted((aggregate['uuid'], row['resource_class'],
                       aggregate['used'], aggregate['capacity'])
                      for row in answer['usage']
                      for aggregate in row['aggregates'])
    assert expected and shown == expected
    # The fullest first.
    fullest = max(expected, key=lambda row: row[2] / row[3])
    assert _rows(browser, 'aggregates')[0][0] == fullest[0]

    hosts = _rows(browser, 'hosts')
    assert [(row[0], row[1], _number(row[3])) for row in hosts] == [
        (host['name'], host['resource_class'], host['used'])
        for host in answer['fullest_hosts']]
    assert hosts[0][0] == 'compute-1'

    stranded = {row[0]: row for row in _rows(browser, 'stranded')}
    expected = {s['resource_class']: s for s in answer['stranded']
                if s['free'] > 0}
    assert sorted(stranded) == sorted(expected)
    for rc, row in expected.items():
        assert _number(stranded[rc][1]) == row['free']
        assert _number(stranded[rc][2]) == row['hosts']
    # compute-6 has memory and disk left but no VCPU for any flavour.
    assert 'MEMORY_MB' in stranded

    screenshot = tmp_path / 'capacity-page.png'
    assert browser.save_screenshot(str(screenshot))
    _check_screenshot(browser, screenshot, cards['m1.small'])


def test_non_admin_gets_the_refusal_and_no_data(service, browser):
    assert _open(browser, service.url + '/x-capacity',
                 token='demo') == 'forbidden'
    refusal = browser.find_element('id', 'refusal')
    assert refusal.is_displayed()
    assert 'Refused (403)' in refusal.text
    assert 'Forbidden' in refusal.text
    assert not browser.find_elements('css selector', '.card')
    assert not browser.find_element('id', 'data').is_displayed()
    for table in ('usage', 'aggregates', 'hosts', 'stranded'):
        assert not _rows(browser, table), table


def test_the_token_stays_in_the_tab(service, browser):
    _open(browser, service.url + '/x-capacity', token='demo')
    browser.find_element('id', 'forget').click()
    field = browser.find_element('id', 'token')
    assert field.is_displayed()
    field.send_keys('admin')
    browser.find_element('css selector', '#login-form button').click()

    from selenium.webdriver.support import wait
    wait.WebDriverWait(browser, WAIT).until(
        lambda driver: driver.find_elements('css selector', '.card'))
    assert browser.execute_script(
        'return sessionStorage.getItem("placement-capacity-token")'
    ) == 'admin'
    assert browser.execute_script('return localStorage.length') == 0
    assert browser.get_cookies() == []


def test_behind_keystone_the_page_asks_for_a_token(behind_keystone,
                                                   browser):
    server, tokens = behind_keystone
    # No token yet: the form, and no request for the answer.
    assert _open(browser, server.url + '/x-capacity') == 'login'
    assert browser.find_element('id', 'login').is_displayed()
    assert not browser.execute_script(
        'return performance.getEntriesByType("resource").filter('
        'function (e) { return e.name.indexOf("x-capacity/") >= 0; })'
        '.length')

    def give(token):
        field = browser.find_element('id', 'token')
        field.clear()
        field.send_keys(token)
        browser.find_element('css selector', '#login-form button').click()
        return _state(browser)

    # A member's token: refused, nothing shown.
    assert give(tokens['project-member']) == 'forbidden'
    assert not browser.find_elements('css selector', '.card')
    assert 'Refused (403)' in browser.find_element('id', 'refusal').text

    browser.find_element('id', 'forget').click()
    assert give(tokens['project-admin']) == 'shown'
    # Another token refused after an answer: nothing of it stays.
    browser.find_element('id', 'forget').click()
    assert give(tokens['project-member']) == 'forbidden'
    assert not browser.find_elements('css selector', '.card, tbody td')
    browser.find_element('id', 'forget').click()
    assert give(tokens['project-admin']) == 'shown'
    answer = requests.get(
        server.url + '/x-capacity/flavours', timeout=30, headers=dict(
            HEADERS, **{'X-Auth-Token': tokens['project-admin']})).json()
    shown = {card.get_attribute('data-flavour'): _number(
        card.find_element('css selector', '.fit span').text)
        for card in browser.find_elements('css selector', '.card')}
    assert shown == {f['name']: f['fit'] for f in answer['flavours']}
    # Kept for the tab only.
    assert browser.execute_script(
        'return sessionStorage.getItem("placement-capacity-token")'
    ) == tokens['project-admin']
    assert browser.execute_script('return localStorage.length') == 0
    assert browser.get_cookies() == []
    # A bogus token: asked again.
    browser.find_element('id', 'forget').click()
    assert give('not-a-keystone-token') == 'unauthorized'
    assert browser.find_element('id', 'login').is_displayed()
    assert browser.execute_script(
        'return sessionStorage.getItem("placement-capacity-token")') is None


def test_one_flavour_from_the_page_query_string(service, browser):
    query = FLAVOURS['m1.large']
    answer = requests.get(
        service.url + '/x-capacity/allocation_candidates?' + query,
        headers=HEADERS, timeout=30).json()
    assert _open(browser, service.url + '/x-capacity?' + query) == 'shown'
    [card] = browser.find_elements('css selector', '.card')
    [flavour] = answer['flavours']
    assert _number(card.find_element(
        'css selector', '.fit span').text) == flavour['fit']


def _check_screenshot(browser, path, headline):
    """The PNG at ``path`` is the page as drawn: many colours, and the
    headline card, where the DOM puts it, holds dark (text) pixels on
    the page's light background."""
    width, height, pixels = _decode_png(path.read_bytes())
    ratio = browser.execute_script('return window.devicePixelRatio')
    assert (width, height) == (round(WIDTH * ratio), round(
        browser.execute_script('return window.innerHeight') * ratio))
    colours = {pixels[y][x] for y in range(0, height, 7)
               for x in range(0, width, 7)}
    assert len(colours) > 20, 'the screenshot is (nearly) blank'
    box = headline.find_element('css selector', '.fit').rect
    dark = 0
    for y in range(int(box['y'] * ratio), int((box['y'] + box['height'])
                                              * ratio)):
        for x in range(int(box['x'] * ratio), int((box['x'] + box['width'])
                                                  * ratio)):
            red, green, blue = pixels[y][x][:3]
            dark += red + green + blue < 200
    assert dark > 50, 'no number drawn where the headline is'


def _decode_png(data):
    """(width, height, rows of (r, g, b[, a]) tuples) of an 8-bit,
    non-interlaced RGB or RGBA PNG, as Chromium's screenshots are."""
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    offset, chunks, header = 8, [], None
    while offset < len(data):
        length, kind = struct.unpack('>I4s', data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b'IHDR':
            header = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            chunks.append(body)
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b''.join(chunks))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xff
            elif kind == 2:
                line[i] = (line[i] + up) & 0xff
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xff
            elif kind == 4:
                estimate = left + up - corner
                guesses = (abs(estimate - left), abs(estimate - up),
                           abs(estimate - corner))
                best = (left, up, corner)[guesses.index(min(guesses))]
                line[i] = (line[i] + best) & 0xff
        rows.append([tuple(line[x:x + channels])
                     for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def test_decode_png_reads_what_chromium_writes(browser, tmp_path):
    """The decoder against a page of known colours."""
    browser.get('data:text/html,<body style="margin:0;background:%23123456">'
                '<div style="width:100px;height:100px;background:%23ff0000">'
                '</div></body>')
    path = tmp_path / 'known.png'
    assert browser.save_screenshot(str(path))
    _width, _height, pixels = _decode_png(path.read_bytes())
    assert pixels[10][10][:3] == (255, 0, 0)
    assert pixels[-10][-10][:3] == (0x12, 0x34, 0x56)
