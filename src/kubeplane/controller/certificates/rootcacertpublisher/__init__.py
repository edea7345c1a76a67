"""The root CA certificate publisher. Upstream: pkg/controller/certificates/rootcacertpublisher."""
from .publisher import DESCRIPTION, DESCRIPTION_ANNOTATION, ROOT_CA_CERT_CONFIG_MAP_NAME, Publisher

__all__ = ["DESCRIPTION", "DESCRIPTION_ANNOTATION", "ROOT_CA_CERT_CONFIG_MAP_NAME", "Publisher"]
