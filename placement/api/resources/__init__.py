"""One handler module per API resource (a Flask blueprint each), and
the helpers they share (claims).
"""
