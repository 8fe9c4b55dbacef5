"""Field management: metadata.managedFields and Server-Side Apply, as kube-apiserver keeps them
(``k8s.io/apimachinery/pkg/util/managedfields`` over ``sigs.k8s.io/structured-merge-diff``).

``fieldset``: sets of field paths in their FieldsV1 shape; ``schema``: the merge type of every
field; ``typed``: field sets, comparison, merge and removal over objects; ``manager``: the
managers of an object and what an update or an apply does to them (conflicts, force, the
upgrade from client-side apply).
"""
