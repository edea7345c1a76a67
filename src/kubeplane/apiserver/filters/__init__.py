"""The HTTP handler chain's filters, in upstream's order (outermost first):

    request deadline (?timeout=)  ->  timeout (504)  ->  authentication  ->  max in-flight (429)

Upstream: DefaultBuildHandlerChain (apiserver/pkg/server/config.go). They wrap only requests
that come over HTTP (app.py): the in-process components call APIServer.route_trusted directly,
as upstream's loopback client in the privileged group would pass every limit.
"""
