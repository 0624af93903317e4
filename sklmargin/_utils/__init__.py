"""Private helpers shared by the subpackages: validation, compatibility, doc links."""
