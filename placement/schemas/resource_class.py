"""Request bodies for /resource_classes."""

NAME = {
    'type': 'string',
    'pattern': '^CUSTOM_[A-Z0-9_]+$',
    'maxLength': 255,
}

POST = {
    'type': 'object',
    'properties': {'name': NAME},
    'required': ['name'],
    'additionalProperties': False,
}

# 1.2-1.6 PUT renames with the same body; 1.7 PUT validates the URL's name
# against the same document.
PUT = POST
