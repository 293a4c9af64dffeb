"""The pages: another face of the same answers (market, my job, offer, providers, digests).

Each page reads the answer functions the JSON routes return (api.answers, api.history,
api.digests), so a page and its JSON never disagree; templates and static assets ship inside this
package, and nothing is loaded from another origin (`Content-Security-Policy: default-src 'self'`)."""
