#!/bin/sh
# Run a build command with the extra CA bundle that the build was given as the
# BuildKit secret "ca" (pudev build --ca-bundle PATH). The bundle is only
# mounted for the RUN that calls this, so it never lands in a layer.
# Without the secret the command runs unchanged.
set -eu
bundle=/run/secrets/ca
if [ -s "$bundle" ]; then
    export PIP_CERT="$bundle" REQUESTS_CA_BUNDLE="$bundle" SSL_CERT_FILE="$bundle" \
        CURL_CA_BUNDLE="$bundle" UV_NATIVE_TLS=1
    # apt reads no environment for this; install scripts pass these options on.
    export PUDEV_APT_CA_OPTIONS="-o Acquire::https::CAInfo=$bundle"
fi
exec "$@"
