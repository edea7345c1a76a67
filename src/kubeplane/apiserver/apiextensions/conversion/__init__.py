"""Conversion of custom objects between a CRD's versions, at the storage boundary.

converter         the CRD's converter (crConverter: the valid versions) over its strategy:
                  None (nopConverter: the apiVersion rewritten) or Webhook
webhook_converter a ConversionReview (v1 or v1beta1) posted to the CRD's webhook, its answer
                  checked as upstream checks it (uid, count, apiVersion, kind, metadata)
codec             the storage codec of a CRD: what is written is converted to the storage
                  version and pruned with its schema; what is read is defaulted in its own
                  version, converted to the requested one and pruned with its schema

Upstream: k8s.io/apiextensions-apiserver pkg/apiserver/conversion (converter.go,
nop_converter.go, webhook_converter.go) and the codec crdConversionRESTOptionsGetter builds
(customresource_handler.go: schemaCoercingDecoder, unstructuredDefaulter,
schemaCoercingConverter).
"""
from __future__ import annotations

from .codec import CustomResourceCodec, UnresolvableCodec
from .converter import ConversionError, new_converter

__all__ = ["CustomResourceCodec", "UnresolvableCodec", "ConversionError", "new_converter"]
