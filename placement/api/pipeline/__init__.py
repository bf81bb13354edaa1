"""What every API request goes through: its declaration and checks
(declaration, request), its microversion, its context and unit of work
(context), its response (responses) and its errors (errors).
"""
