# Sourced by the make_*.sh scripts here: compile one ns-3.37 scenario.
#
# `ns3_build NAME` compiles NAME.cc into "$BUILD/NAME" (BUILD: a temporary folder, removed on
# exit). Needs g++ and ns-3.37 development files (Debian package libns3-dev). The flags are
# spelled out because `pkg-config --cflags ns3-core` is broken in the Debian 3.37 package (it
# emits "-I/usr\;"). Every scenario links the same ns-3 modules.
CXX=${CXX:-g++}
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT

ns3_build() {
	set -x
	$CXX -O1 -std=c++17 -I/usr/include "$1.cc" -o "$BUILD/$1" \
		-L/usr/lib/x86_64-linux-gnu -lns3-core -lns3-network -lns3-internet -lns3-point-to-point \
		-lns3-applications -lns3-flow-monitor -lns3-traffic-control
	{ set +x; } 2>/dev/null
}
