"""Request and response bodies of /resource_classes."""
from placement.schemas import response

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

RESOURCE_CLASS = response.Body('ResourceClass', {
    'type': 'object',
    'required': ['name', 'links'],
    'properties': {'name': {'type': 'string'}, 'links': response.LINKS},
})
RESOURCE_CLASSES = response.Body('ResourceClasses', {
    'type': 'object',
    'required': ['resource_classes'],
    'properties': {'resource_classes': {
        'type': 'array', 'items': RESOURCE_CLASS}},
})
