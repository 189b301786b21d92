# The wanwide image: the operator (with helm) and the Rally runner entrypoint (the
# [operator] extra; `wanwide report` needs the [report] extra, not in the image).
#   docker build -t ghcr.io/wanwide/wanwide:0.1.0 .
#   operator:  wanwide operator --namespaces=default
#   runner:    wanwide runner run --config /etc/wanwide/runner.json   (what the Rally Jobs run)
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS helm
# the Kubernetes version helm assumes for `helm template` (1.37, from its client-go, as its Makefile
# and hack/testcluster/build.sh set it; `go install` alone leaves 1.20)
RUN GOBIN=/out go install -trimpath -ldflags="-s -w \
      -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37 \
      -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37" \
      helm.sh/helm/v3/cmd/helm@v3.22.0

FROM ${PYTHON_IMAGE} AS base
ENV PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates iputils-ping iproute2 \
 && rm -rf /var/lib/apt/lists/*
# Rally lives in its own virtualenv (its pins clash with the operator's); the same
# pins and lock as the lab's (requirements/rally.txt, requirements/rally.lock).
COPY requirements/rally.txt requirements/rally.lock /tmp/rally/
RUN python -m venv /opt/rally \
 && /opt/rally/bin/pip install -r /tmp/rally/rally.txt -c /tmp/rally/rally.lock \
 && ln -s /opt/rally/bin/rally /usr/local/bin/rally \
 && rm -rf /tmp/rally
COPY --from=helm /out/helm /usr/local/bin/helm
WORKDIR /src
COPY pyproject.toml README.md ./
COPY requirements/wanwide.lock ./requirements/
COPY operator ./operator
RUN pip install -c requirements/wanwide.lock '.[operator]' && rm -rf /src
RUN useradd --uid 10001 --create-home wanwide
USER 10001
ENV WANWIDE_RALLY=/opt/rally/bin/rally HOME=/home/wanwide
ENTRYPOINT ["wanwide"]
CMD ["operator"]
