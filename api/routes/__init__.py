"""One router per resource; each route is a thin shell over api.answers."""
