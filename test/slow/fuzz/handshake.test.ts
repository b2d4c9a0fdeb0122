// Deep fuzzing (see deep-run.ts): handshake.
import t from 'tap';
import { deepFuzz } from './deep-run.js';

deepFuzz(t, ['handshake']);
