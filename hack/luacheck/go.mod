// hack/luacheck: Argo CD's health-script runtime (gopher-lua) for the tests.
// The versions are those Argo CD's go.mod pins (ARGOCD_VERSION in hack/argocd.sh).
module wanwide.io/hack/luacheck

go 1.24

require (
	github.com/yuin/gopher-lua v1.1.2
	layeh.com/gopher-json v0.0.0-20190114024228-97fed8db8427
)
