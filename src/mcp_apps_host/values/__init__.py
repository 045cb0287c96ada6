"""Plain values every layer shares: tool entries, templates, CSP declarations, content and
link helpers, and the protocol's names. Nothing here does I/O or imports the rest of the
package."""
