"""Ciphertexts recorded from upstream and Go, shared by the provider and configuration tests."""

# Recorded output of upstream's NewGCMTransformer at 3b1fc60d (TestGCMLegacyDataCompatibility,
# apiserver/pkg/storage/value/encrypt/aes/aes_test.go): key "snorlax_awesomes", authenticated
# data "bamboo", plaintext "pandas are the best". The Go literal's \u05c8 is its UTF-8 bytes
# d7 88, \a is 07 and \b is 08.
LEGACY_GCM = (b"\x9f'\xc8\xfc\xea\x8aX\xc4g\xd8\xe47\xdb\xf2\xd8YU\xf9\xb4\xbd\x91/N\xf9g\xd7\x88\xa0\xcb\x07y}"
              b"\xac\n?\n\x08E`\\\xa8Z\xc8V+J\xe1")

# golang.org/x/crypto/nacl/secretbox TestSecretBox: key 0x01 x32, nonce 0x02 x24, message
# 0x03 x64; "expected was generated using the C implementation of NaCl". Upstream stores
# nonce + this box after its prefix.
GO_BOX = bytes.fromhex(
    "8442bc313f4626f1359e3b50122b6ce6fe66ddfe7d39d14e637eb4fd5b45beadab55198df6ab5368439792a23c87db70"
    "acb6156dc5ef957ac04f6276cf6093b84be77ff0849cc33e34b7254d5a8f65ad")
