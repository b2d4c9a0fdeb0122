// The key of a folder-and-peer pair in the folder service's maps (its peer limits, local-change
// reports, share watches): a NUL cannot occur in a folder id or a node id.

export const pairKey = (folder: string, peer: string): string => `${folder}\u0000${peer}`;

/** The pair `key` is one of `folder`'s. */
export const isFolderPair = (key: string, folder: string): boolean => key.startsWith(`${folder}\u0000`);

/** The pair `key` is one of `peer`'s. */
export const isPeerPair = (key: string, peer: string): boolean => key.endsWith(`\u0000${peer}`);

/** [folder, peer] of a pair key. */
export const pairOf = (key: string): [string, string] => key.split('\u0000') as [string, string];
