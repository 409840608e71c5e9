#!/bin/bash
#
# DevStack plugin for nova-orphans: install it, configure it in nova.conf
# and check it against the freshly stacked cloud.
#
#   enable_plugin nova-orphans https://opendev.org/x/nova-orphans

# Save trace setting
_XTRACE_NOVA_ORPHANS=$(set +o | grep xtrace)
set +o xtrace

function install_nova_orphans {
    # DevStack's pip_install applies the branch's upper constraints, as
    # deployments of that release install: the requirement floors are
    # the oldest supported release's pins. The osc extra: the
    # openstack commands this plugin runs.
    setup_develop "$NOVA_ORPHANS_DIR" osc
}

function configure_nova_orphans {
    sudo install -d -o "$STACK_USER" -m 0700 "$NOVA_ORPHANS_STATE_PATH"
    iniset "$NOVA_CONF" nova_orphans state_path "$NOVA_ORPHANS_STATE_PATH"
    iniset "$NOVA_CONF" nova_orphans cell_timeout "$NOVA_ORPHANS_CELL_TIMEOUT"
}

function check_nova_orphans {
    # A fresh cloud has no orphans: both front ends must agree (exit 0).
    openstack allocation orphan list
    nova-orphans-manage --config-file "$NOVA_CONF" allocations list
    # Nor provider trees of deleted compute nodes.
    openstack resource provider orphan list
    nova-orphans-manage --config-file "$NOVA_CONF" providers list
}

function cleanup_nova_orphans {
    sudo rm -rf "$NOVA_ORPHANS_STATE_PATH"
}

if is_service_enabled nova-orphans; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing nova-orphans"
        install_nova_orphans
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring nova-orphans"
        configure_nova_orphans
    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        echo_summary "Checking placement allocations with nova-orphans"
        check_nova_orphans
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_nova_orphans
    fi
fi

# Restore xtrace
$_XTRACE_NOVA_ORPHANS
