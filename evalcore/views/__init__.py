"""evalcore's pages: thin views over selectors and services, one template per page with htmx partials."""
