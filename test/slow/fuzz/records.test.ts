// Deep fuzzing (see deep-run.ts): revision, version-vector, share-path.
import t from 'tap';
import { deepFuzz } from './deep-run.js';

deepFuzz(t, ['revision', 'version-vector', 'share-path']);
