"""The only code that talks to the API server (server-side apply, get, list, delete) or runs helm."""
