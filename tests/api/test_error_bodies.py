"""Every error answer reads byte for byte as upstream 16.0.0's: the
probes of tests/error_bodies.py (every route's errors, before and after
error codes, as JSON, plain text and HTML) against upstream's recorded
answers, request ids aside.
"""
import error_bodies


def test_error_answers_are_upstreams_byte_for_byte(api):
    def send(method, path, headers, body):
        response = api.client.open(path, method=method, headers=headers,
                                   data=body)
        return (response.status_code, response.headers.get('Content-Type'),
                response.data)

    record = error_bodies.load_record()
    found = error_bodies.answers(send)
    differing = {name: {'ours': found[name], 'upstream': record[name]}
                 for name in record if found[name] != record[name]}
    assert not differing
