// Deep fuzzing (see deep-run.ts): control-messages, control-text, reconcile-codec.
import t from 'tap';
import { deepFuzz } from './deep-run.js';

deepFuzz(t, ['control-messages', 'control-text', 'reconcile-codec']);
