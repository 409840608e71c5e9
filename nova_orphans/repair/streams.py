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
"""Streams of writes that never meet on a provider, for clean and restore.

Each stream is written batch after batch while the others are. Placement
bumps a provider's generation on every write to it, so writes of two
streams to one provider would meet (placement retries, or refuses, such
writes); and one consumer's writes must follow each other in order.
"""


def split(links, count):
    """Positions ``0 .. len(links) - 1`` in up to ``count`` lists, each in
    order, such that items linked by a key are in the same list.

    ``links[n]``: the keys item ``n`` touches, at least one (providers,
    consumers); items sharing a key, or linked through others, form a
    group. The largest groups are placed first, each in the shortest
    list so far.
    """
    parent = {}

    def find(key):
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key
    for keys in links:
        for key in keys[1:]:
            parent[find(key)] = find(keys[0])
    groups = {}
    for n, keys in enumerate(links):
        groups.setdefault(find(keys[0]), []).append(n)
    streams = [[] for _n in range(count)]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(streams, key=len).extend(group)
    return [sorted(stream) for stream in streams if stream]


def apart(items, keys):
    """``items`` (in order) as two lists: those whose ``keys(item)``
    meet no earlier one's, and the others, for a later batch. One
    batch's writes go out concurrently, from documents read before any
    of them: two that carry one consumer would refuse each other, as
    if another writer had changed it.
    """
    taken, now, later = set(), [], []
    for item in items:
        own = set(keys(item))
        (later if own & taken else now).append(item)
        taken |= own
    return now, later
