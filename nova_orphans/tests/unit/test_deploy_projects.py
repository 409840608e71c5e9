#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""The deployment projects' files (deploy/): the Kubernetes manifests
follow the nova chart's conventions, the openstack-helm values hold the
same objects, the image runs as a non-root user. The tools that read
them (kubernetes-validate, hadolint, ansible-playbook, ansible-lint,
systemd-analyze) run in nova_orphans/tests/deployment.
"""

import os

from oslotest import base

from nova_orphans.repair import journal
from nova_orphans.tests import deploy
from nova_orphans.tests import programs

LOCK = journal.SYSTEM_STATE_PATH + '/lock'
NOVA_UID = 42424


def cron_jobs():
    return {m['metadata']['name']: m for m in deploy.manifests()
            if m['kind'] == 'CronJob'}


class KubernetesTestCase(base.BaseTestCase):

    def pods(self):
        """(name, pod spec) of every CronJob and the restore Job."""
        pods = [(name, job['spec']['jobTemplate']['spec']['template'])
                for name, job in cron_jobs().items()]
        [restore] = deploy.manifests('nova-orphans-restore.yaml')
        return pods + [(restore['metadata']['name'],
                        restore['spec']['template'])]

    def test_cron_jobs_as_the_nova_chart_has_them(self):
        jobs = cron_jobs()
        self.assertEqual(['nova-orphans-clean', 'nova-orphans-metrics'],
                         sorted(jobs))
        for name, job in jobs.items():
            spec = job['spec']
            self.assertEqual(('Forbid', 3, 1, 600), (
                spec['concurrencyPolicy'], spec['successfulJobsHistoryLimit'],
                spec['failedJobsHistoryLimit'],
                spec['startingDeadlineSeconds']), name)
            self.assertEqual(0, spec['jobTemplate']['spec']['backoffLimit'])
        # The scan every 15 minutes; the clean nightly and opt-in.
        self.assertEqual('*/15 * * * *',
                         jobs['nova-orphans-metrics']['spec']['schedule'])
        self.assertNotIn('suspend', jobs['nova-orphans-metrics']['spec'])
        self.assertEqual(('30 3 * * *', True), (
            jobs['nova-orphans-clean']['spec']['schedule'],
            jobs['nova-orphans-clean']['spec']['suspend']))

    def test_pods(self):
        """nova.conf from nova-etc, its keystone sections from
        nova-ks-etc; the volume; non-root; resources; one lock.
        """
        for name, template in self.pods():
            spec = template['spec']
            self.assertEqual('Never', spec['restartPolicy'])
            self.assertEqual(
                {'runAsUser': NOVA_UID, 'runAsGroup': NOVA_UID,
                 'fsGroup': NOVA_UID, 'runAsNonRoot': True,
                 'seccompProfile': {'type': 'RuntimeDefault'}},
                spec['securityContext'], name)
            volumes = {v['name']: v for v in spec['volumes']}
            self.assertEqual('nova-etc',
                             volumes['nova-etc']['secret']['secretName'])
            self.assertEqual(
                [{'secret': {'name': 'nova-ks-etc'}}],
                volumes['nova-etc-snippets']['projected']['sources'])
            self.assertEqual(
                'nova-orphans',
                volumes['state']['persistentVolumeClaim']['claimName'])
            [container] = spec['containers']
            self.assertEqual(
                {'allowPrivilegeEscalation': False,
                 'readOnlyRootFilesystem': True,
                 'capabilities': {'drop': ['ALL']}},
                container['securityContext'], name)
            self.assertEqual({'limits', 'requests'},
                             set(container['resources']))
            mounts = {m['mountPath']: m for m in container['volumeMounts']}
            self.assertEqual(('nova-etc', 'nova.conf', True), (
                mounts['/etc/nova/nova.conf']['name'],
                mounts['/etc/nova/nova.conf']['subPath'],
                mounts['/etc/nova/nova.conf']['readOnly']))
            self.assertEqual('nova-etc-snippets',
                             mounts['/etc/nova/nova.conf.d/']['name'])
            self.assertEqual('state',
                             mounts[journal.SYSTEM_STATE_PATH]['name'])
            self.assertNotIn('readOnly', mounts[journal.SYSTEM_STATE_PATH])
            env = {e['name']: e['value'] for e in container['env']}
            self.assertEqual('/etc/nova/nova.conf',
                             env['NOVA_ORPHANS_CONFIG'])
            # Never two at once: each waits for the same lock, on the
            # volume, on the exporter's node.
            self.assertEqual(
                'flock %s nova-orphans-' % LOCK,
                ' '.join(deploy.pod_command(container))[:len(LOCK) + 20],
                name)
            [term] = spec['affinity']['podAffinity'][
                'requiredDuringSchedulingIgnoredDuringExecution']
            self.assertEqual(
                ({'application': 'nova-orphans',
                  'component': 'metrics-exporter'},
                 'kubernetes.io/hostname'),
                (term['labelSelector']['matchLabels'], term['topologyKey']))

    def test_metrics_served_from_the_volume(self):
        """node_exporter's textfile collector reads the directory the
        jobs write their metrics in; the Service selects it.
        """
        objects = {(m['kind'], m['metadata']['name']): m
                   for m in deploy.manifests()}
        exporter = objects['Deployment', 'nova-orphans-metrics']
        [term] = cron_jobs()['nova-orphans-metrics']['spec']['jobTemplate'][
            'spec']['template']['spec']['affinity']['podAffinity'][
            'requiredDuringSchedulingIgnoredDuringExecution']
        labels = exporter['spec']['template']['metadata']['labels']
        self.assertEqual(term['labelSelector']['matchLabels'], labels)
        [container] = exporter['spec']['template']['spec']['containers']
        self.assertIn('--collector.textfile.directory=%s'
                      % journal.SYSTEM_STATE_PATH, container['args'])
        self.assertEqual(
            {'nova_orphans.prom', 'nova_orphans_clean.prom'},
            {os.path.relpath(e['value'], journal.SYSTEM_STATE_PATH)
             for job in cron_jobs().values()
             for c in job['spec']['jobTemplate']['spec']['template'][
                 'spec']['containers']
             for e in c['env'] if e['name'].endswith('METRICS')})
        service = objects['Service', 'nova-orphans-metrics']
        self.assertEqual(labels, service['spec']['selector'])
        self.assertEqual('true', service['metadata']['annotations'][
            'prometheus.io/scrape'])

    def test_openstack_helm_values_are_the_manifests(self):
        """The values file is what tools/deploy/openstack-helm-values
        writes from the manifests, and holds the same objects, with no
        template the chart's tpl would change.
        """
        written = programs.tool('tools', 'deploy',
                                'openstack-helm-values').render()
        with open(deploy.HELM_VALUES) as f:
            self.assertEqual(written, f.read())
        values = deploy.openstack_helm_objects()
        self.assertEqual(deploy.manifests(), list(values.values()))
        with open(deploy.HELM_VALUES) as f:
            self.assertNotIn('{{', f.read())


class ContainerfileTestCase(base.BaseTestCase):

    def test_non_root_with_the_tool_as_entry_point(self):
        with open(os.path.join(deploy.CONTAINER, 'Containerfile')) as f:
            lines = [line.split(None, 1) for line in f.read().splitlines()
                     if line and not line[0].isspace() and line[0] != '#']
        instructions = {}
        for words in lines:
            instructions.setdefault(words[0], []).append(words[1])
        self.assertEqual(['%d:%d' % (NOVA_UID, NOVA_UID)],
                         instructions['USER'])
        self.assertEqual(['["nova-orphans-manage"]'],
                         instructions['ENTRYPOINT'])
        self.assertIn('RELEASE=2026.2', instructions['ARG'])
